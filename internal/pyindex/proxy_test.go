package pyindex

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"imagectl/internal/wheelhouse"
)

// plainIndex writes a PEP 503 index the way a directory behind a web server
// is one (wheelhouse.WritePlainIndex): index.html pages only, no JSON, no
// metadata files; its URL is the server's root.
func plainIndex(t *testing.T, dir string, specs ...wheelhouse.Spec) {
	t.Helper()
	for _, s := range specs {
		if _, err := wheelhouse.WriteWheel(dir, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wheelhouse.WritePlainIndex(dir); err != nil {
		t.Fatal(err)
	}
}

// noRange serves dir like `python3 -m http.server`: whole files, Range
// ignored, and counts the bytes it sent.
type noRange struct {
	dir  string
	sent atomic.Int64
}

func (s *noRange) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := filepath.Join(s.dir, filepath.FromSlash(r.URL.Path))
	if strings.HasSuffix(r.URL.Path, "/") {
		p = filepath.Join(p, "index.html")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	n, _ := w.Write(b)
	s.sent.Add(int64(n))
}

// ranged serves dir with http.FileServer (range requests work) and counts.
type ranged struct {
	h    http.Handler
	sent atomic.Int64
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (s *ranged) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.h.ServeHTTP(countingWriter{w, &s.sent}, r)
}

func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

const big = 8 << 20

func torchSpecs() []wheelhouse.Spec {
	return []wheelhouse.Spec{
		{Name: "torch", Version: "2.6.0+cu124", Requires: []string{"nvidia-nccl-cu12==2.21.5", "filelock"}, PayloadBytes: big},
		{Name: "nvidia-nccl-cu12", Version: "2.21.5"},
		{Name: "filelock", Version: "3.0.0"}, // re-hosted, older: must not be used
	}
}

func pypiSpecs() []wheelhouse.Spec {
	return []wheelhouse.Spec{
		{Name: "torch", Version: "2.6.0", PayloadBytes: 1024}, // the same name on PyPI: must not be used
		{Name: "filelock", Version: "3.16.1"},
		{Name: "numpy", Version: "2.2.0"},
	}
}

func metadataOf(t *testing.T, p *Proxy, project, filename string) string {
	t.Helper()
	_, files, err := p.Project(context.Background(), project)
	if err != nil {
		t.Fatalf("Project(%s) = %v", project, err)
	}
	for _, f := range files {
		if f.Filename == filename {
			code, b := get(t, "http://"+p.ln.Addr().String()+"/files/"+fileKey(f)+"/"+f.Filename+".metadata")
			if code != 200 {
				t.Fatalf("metadata of %s: HTTP %d: %s", filename, code, b)
			}
			return string(b)
		}
	}
	t.Fatalf("Project(%s) lists no %s", project, filename)
	return ""
}

func TestProxyPlainIndexNoRange(t *testing.T) {
	torchDir, pypiDir := t.TempDir(), t.TempDir()
	plainIndex(t, torchDir, torchSpecs()...)
	plainIndex(t, pypiDir, pypiSpecs()...)
	torchSrv := &noRange{dir: torchDir}
	pypiSrv := &noRange{dir: pypiDir}
	ts, ps := httptest.NewServer(torchSrv), httptest.NewServer(pypiSrv)
	defer ts.Close()
	defer ps.Close()
	cache := t.TempDir()
	routes := Routes{Torch: ts.URL + "/", Indexes: []string{ps.URL + "/"}}

	for run := range 2 {
		p, err := Start(routes, WithCacheDir(cache))
		if err != nil {
			t.Fatal(err)
		}
		before := torchSrv.sent.Load()
		md := metadataOf(t, p, "torch", "torch-2.6.0+cu124-py3-none-any.whl")
		if !strings.Contains(md, "Requires-Dist: nvidia-nccl-cu12==2.21.5") {
			t.Errorf("run %d: torch metadata = %q, want the torch index's wheel (nccl pin)", run, md)
		}
		fetched := torchSrv.sent.Load() - before
		st := p.Stats()
		switch run {
		case 0:
			if st.Downloads != 1 || fetched < big {
				t.Errorf("run 0: stats %+v, %d bytes sent: want the big wheel read once, whole (the server ignores Range)", st, fetched)
			}
		case 1:
			if st.Downloads != 0 || st.CacheHits != 1 || fetched > 64<<10 {
				t.Errorf("run 1: stats %+v, %d bytes sent: want the metadata from the cache and only the page fetched", st, fetched)
			}
		}
		// The same project on both indexes: each from its one route.
		ix, files, err := p.Project(context.Background(), "filelock")
		if err != nil || ix != ps.URL+"/" || len(files) != 1 || !strings.Contains(files[0].Filename, "3.16.1") {
			t.Errorf("Project(filelock) = %s %v %v, want PyPI's 3.16.1 only", ix, files, err)
		}
		code, page := get(t, p.URL()+"torch/")
		if code != 200 || strings.Contains(string(page), "torch-2.6.0-py3") || !strings.Contains(string(page), `data-core-metadata="true"`) {
			t.Errorf("torch page: HTTP %d\n%s\nwant only the torch index's file, with metadata", code, page)
		}
		if s, ok := p.Lookup(p.URL()[:len(p.URL())-len("simple/")] + "files/" + fileKey(files[0]) + "/" + files[0].Filename); !ok || s.Index != ps.URL+"/" || s.URL != ps.URL+"/"+files[0].Filename {
			t.Errorf("Lookup(filelock) = %+v, %v; want the upstream URL and index", s, ok)
		}
		p.Close()
	}
}

func TestProxyRangeRequests(t *testing.T) {
	dir := t.TempDir()
	plainIndex(t, dir, torchSpecs()...)
	srv := &ranged{h: http.FileServer(http.Dir(dir))}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	p, err := Start(Routes{Torch: ts.URL + "/"}, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	md := metadataOf(t, p, "torch", "torch-2.6.0+cu124-py3-none-any.whl")
	if !strings.Contains(md, "Name: torch") {
		t.Errorf("metadata = %q", md)
	}
	st := p.Stats()
	if st.Downloads != 0 || st.RangeReads == 0 || st.RangeBytes > 3*blockSize || srv.sent.Load() > 3*blockSize+64<<10 {
		t.Errorf("stats %+v, server sent %d: want a few range reads, not the %d-byte wheel", st, srv.sent.Load(), big)
	}
	// pip (23.0 and older downloads every resolved wheel even with --dry-run)
	// gets the file from the wheel cache: read from upstream once.
	_, files, _ := p.Project(context.Background(), "torch")
	before := srv.sent.Load()
	for i := range 2 {
		code, b := get(t, p.FileURL(files[0]))
		if code != 200 || len(b) < big {
			t.Fatalf("GET %s #%d: HTTP %d, %d bytes", files[0].Filename, i, code, len(b))
		}
	}
	if sent := srv.sent.Load() - before; sent < big || sent > 2*big-1 {
		t.Errorf("two GETs of the wheel through the proxy: upstream sent %d bytes, want the %d-byte wheel once", sent, big)
	}
	if st := p.Stats(); st.Served != 2 || st.Downloads != 1 {
		t.Errorf("stats %+v: want 2 served from the cache, 1 download", st)
	}

	// Without other indexes, every project comes from the torch index:
	// its filelock is found there, numpy is not.
	if ix, files, err := p.Project(context.Background(), "filelock"); err != nil || ix != ts.URL+"/" || len(files) != 1 {
		t.Errorf("Project(filelock) = %s %v %v, want the torch index's", ix, files, err)
	}
	if _, _, err := p.Project(context.Background(), "numpy"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Project(numpy) = %v, want ErrNotFound", err)
	}
	if _, _, err := (&Proxy{routes: Routes{}, c: p.c, files: map[string]Served{}, pages: map[string]page{}}).Project(context.Background(), "numpy"); err == nil || !strings.Contains(err.Error(), "no index to take it from") {
		t.Errorf("Project(numpy) without indexes = %v, want a routing error", err)
	}
}

// TestProxyPEP691AndPEP658 reads wheelhouse's index: PEP 691 JSON pages
// (which carry no metadata keys: metadata by range requests) and, asked for
// HTML only, PEP 503 pages with PEP 658 attributes (the index's own
// metadata files, nothing else).
func TestProxyPEP691AndPEP658(t *testing.T) {
	dir := t.TempDir()
	for _, s := range pypiSpecs() {
		if _, err := wheelhouse.Publish(dir, s); err != nil {
			t.Fatal(err)
		}
	}
	var accepts atomic.Value
	h := wheelhouse.Handler(dir)
	jsonSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/simple/") {
			accepts.Store(r.Header.Get("Accept"))
		}
		h.ServeHTTP(w, r)
	}))
	defer jsonSrv.Close()
	htmlSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept")
		h.ServeHTTP(w, r)
	}))
	defer htmlSrv.Close()
	for _, tc := range []struct {
		name string
		url  string
		want func(Stats) bool
	}{
		{"json", jsonSrv.URL, func(s Stats) bool { return s.MetadataFiles == 0 && s.RangeReads > 0 && s.Downloads == 0 }},
		{"html+pep658", htmlSrv.URL, func(s Stats) bool { return s.MetadataFiles == 1 && s.RangeReads == 0 && s.Downloads == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(Routes{Indexes: []string{tc.url + "/simple/"}}, WithCacheDir(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			md := metadataOf(t, p, "numpy", "numpy-2.2.0-py3-none-any.whl")
			if !strings.Contains(md, "Version: 2.2.0") {
				t.Errorf("metadata = %q", md)
			}
			if st := p.Stats(); !tc.want(st) {
				t.Errorf("stats %+v", st)
			}
			if _, _, err := p.Project(context.Background(), "nosuch"); err == nil {
				t.Error("Project(nosuch) = nil error")
			}
			if code, _ := get(t, p.URL()+"nosuch/"); code != 404 {
				t.Errorf("GET nosuch = HTTP %d, want 404", code)
			}
		})
	}
	if a, _ := accepts.Load().(string); !strings.Contains(a, "application/vnd.pypi.simple.v1+json") {
		t.Errorf("Accept = %q, want PEP 691 JSON asked for", a)
	}
}
