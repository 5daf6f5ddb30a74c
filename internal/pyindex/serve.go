package pyindex

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"imagectl/internal/pep"
)

// ServeHTTP serves /simple/<project>/ (PEP 503 HTML with PEP 658/714
// metadata attributes), /files/<key>/<name> (the upstream file, streamed)
// and /files/<key>/<name>.metadata.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if p.token != "" {
		// Beyond loopback only the token's holder (pip in the lock's step)
		// is answered: anyone else gets 404 before any upstream request.
		rest, ok := strings.CutPrefix(r.URL.Path, "/"+p.token+"/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + rest
		r = r2
	}
	switch {
	case r.URL.Path == "/simple/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(pep.Page{RepositoryVersion: "1.1", Title: "Simple index"}.Bytes())
	case strings.HasPrefix(r.URL.Path, "/simple/"):
		p.servePage(w, r)
	case strings.HasPrefix(r.URL.Path, "/files/"):
		p.serveFile(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (p *Proxy) servePage(w http.ResponseWriter, r *http.Request) {
	raw := strings.Trim(strings.TrimPrefix(r.URL.Path, "/simple/"), "/")
	if raw == "" || strings.Contains(raw, "/") {
		http.NotFound(w, r)
		return
	}
	if n := pep.Normalize(raw); n != raw || !strings.HasSuffix(r.URL.Path, "/") {
		http.Redirect(w, r, strings.TrimPrefix(p.root(), "http://"+p.ln.Addr().String())+"/simple/"+n+"/", http.StatusMovedPermanently)
		return
	}
	_, files, err := p.Project(r.Context(), raw)
	if errors.Is(err, ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		p.fail(w, err)
		return
	}
	page := pep.Page{RepositoryVersion: "1.1", Title: "Links for " + raw}
	for _, f := range files {
		l := pep.Link{Href: "../../files/" + fileKey(f) + "/" + urlPathEscape(f.Filename), Text: f.Filename,
			RequiresPython: f.RequiresPython, Yanked: f.Yanked, YankedReason: f.YankedReason}
		if f.SHA256 != "" {
			l.Href += "#sha256=" + f.SHA256
		}
		if strings.HasSuffix(f.Filename, ".whl") && pep.IsSHA256(f.SHA256) && !p.noMetadata.Load() {
			// The hash of the metadata is unknown until it is read: PEP 714
			// allows "true".
			l.CoreMetadata = "true"
		}
		page.Links = append(page.Links, l)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page.Bytes())
}

func (p *Proxy) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/files/")
	key, name, ok := strings.Cut(rest, "/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	s, ok := p.files[key]
	p.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if name == s.Filename+".metadata" {
		b, err := p.c.metadata(r.Context(), s.File)
		if err != nil {
			p.fail(w, fmt.Errorf("metadata of %s from %s: %w", s.Filename, redactURL(s.Index), err))
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(normalizeNames(b))
		return
	}
	if name != s.Filename {
		http.NotFound(w, r)
		return
	}
	// pip (before 25.3 even with --dry-run) and the resolution step ask for
	// files: a file with a sha256 comes from the wheel cache, read from
	// upstream at most once (streamed to this client as it is cached); any
	// other is streamed through.
	if pep.IsSHA256(s.SHA256) {
		p.serveWheel(w, r, s)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, s.URL, nil)
	if err != nil {
		p.fail(w, err)
		return
	}
	resp, err := p.c.do(req)
	if err != nil {
		p.fail(w, fmt.Errorf("fetching %s: %w", redactURL(s.URL), err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		p.fail(w, fmt.Errorf("fetching %s: HTTP %d", redactURL(s.URL), resp.StatusCode))
		return
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" {
		w.Header().Set("Content-Length", cl)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	n, _ := io.Copy(w, resp.Body)
	p.c.n.downloads.Add(1)
	p.c.n.downloadBytes.Add(n)
}

// serveWheel answers a GET or HEAD of a wheel with a sha256 from the
// wheel cache. A wheel not cached yet is read from upstream once (the
// wheel's flight, shared with metadata reads that need the whole file): a
// plain GET that leads the flight gets the bytes as they arrive, while
// they are hashed and written to the cache in the same pass; the response
// is cut short (so the client fails) when the sha256 is not the index's,
// and the cache keeps nothing then. Any other request waits for the cache.
func (p *Proxy) serveWheel(w http.ResponseWriter, r *http.Request, s Served) {
	path := p.c.wheelPath(s.SHA256)
	if _, err := os.Stat(path); err != nil && r.Method == http.MethodGet && r.Header.Get("Range") == "" {
		streamed, cut := false, false
		ch := p.c.flight.DoChan(wheelKey(s.SHA256), func() (any, error) {
			if path, err := p.c.cached(s.SHA256); err == nil {
				return path, nil // a flight that just ended cached it
			}
			streamed = true
			path, c, err := p.streamWheel(w, r, s)
			cut = c
			return path, err
		})
		// This handler owns w until the stream ends, whatever the client
		// does: the upstream read stops with r's context.
		<-ch
		if streamed {
			if cut {
				// The status line and part of the body are out: only
				// cutting the connection tells the client the file is not
				// whole.
				panic(http.ErrAbortHandler)
			}
			return
		}
		// Another read cached it (or failed: c.wheel reads it again).
	}
	path, err := p.c.wheel(r.Context(), s.File)
	if err != nil {
		p.fail(w, fmt.Errorf("%s from %s: %w", s.Filename, redactURL(s.Index), err))
		return
	}
	fh, err := os.Open(path)
	if err != nil {
		p.fail(w, err)
		return
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		p.fail(w, err)
		return
	}
	// http.ServeContent sends an *os.File with sendfile(2).
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, s.Filename, time.Time{}, fh)
	p.c.n.served.Add(1)
	p.c.n.servedBytes.Add(st.Size())
}

// streamWheel reads s from upstream to the client and the cache at once
// and returns the cached file; it runs in the wheel's flight and the cache
// has no copy. An error before the body started is answered here; cut
// reports one after it started, which the handler must answer by aborting.
func (p *Proxy) streamWheel(w http.ResponseWriter, r *http.Request, s Served) (path string, cut bool, err error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, s.URL, nil)
	if err != nil {
		p.fail(w, err)
		return "", false, err
	}
	resp, err := p.c.do(req)
	if err != nil {
		err = fmt.Errorf("%s from %s: fetching %s: %w", s.Filename, redactURL(s.Index), redactURL(s.URL), err)
		p.fail(w, err)
		return "", false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s from %s: fetching %s: HTTP %d", s.Filename, redactURL(s.Index), redactURL(s.URL), resp.StatusCode)
		p.fail(w, err)
		return "", false, err
	}
	if resp.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	cw := &countWriter{w: w}
	path, err = p.c.storeWheel(resp.Body, s.File, cw)
	if err != nil {
		err = fmt.Errorf("%s from %s: %w", s.Filename, redactURL(s.Index), err)
		p.mu.Lock()
		if len(p.errs) < 20 {
			p.errs = append(p.errs, err)
		}
		p.mu.Unlock()
		return "", true, err
	}
	p.c.n.served.Add(1)
	p.c.n.servedBytes.Add(cw.n)
	return path, false, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func (p *Proxy) fail(w http.ResponseWriter, err error) {
	p.mu.Lock()
	if len(p.errs) < 20 {
		p.errs = append(p.errs, err)
	}
	p.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadGateway)
}
