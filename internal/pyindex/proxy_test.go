package pyindex

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"imagectl/internal/compat"
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
	p := servedPath(s.dir, r)
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
	cu124, _ := compat.LookupWheel("2.6.0", "cu124")
	routes := Routes{Torch: ts.URL + "/", TorchOnly: cu124.FromTorchIndex, Indexes: []string{ps.URL + "/"}}

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

func TestRoutesCandidates(t *testing.T) {
	cu124, _ := compat.LookupWheel("2.6.0", "cu124")
	cu130, _ := compat.LookupWheel("2.11.0", "cu130")
	const torch, pypi = "https://torch.example/whl/", "https://pypi.example/simple/"
	for _, tc := range []struct {
		name    string
		routes  Routes
		project string
		want    []string
	}{
		{"torch from the torch index", Routes{Torch: torch, TorchOnly: cu124.FromTorchIndex, Indexes: []string{pypi}}, "torch", []string{torch}},
		{"nvidia-* from the torch index", Routes{Torch: torch, TorchOnly: cu124.FromTorchIndex, Indexes: []string{pypi}}, "nvidia_nccl_cu12", []string{torch}},
		{"numpy from the others", Routes{Torch: torch, TorchOnly: cu124.FromTorchIndex, Indexes: []string{pypi}}, "numpy", []string{pypi}},
		{"cuda-toolkit from the others for 2.6", Routes{Torch: torch, TorchOnly: cu124.FromTorchIndex, Indexes: []string{pypi}}, "cuda-toolkit", []string{pypi}},
		{"cuda-toolkit from the torch index for 2.11", Routes{Torch: torch, TorchOnly: cu130.FromTorchIndex, Indexes: []string{pypi}}, "Cuda_Toolkit", []string{torch}},
		{"everything from torch without other indexes", Routes{Torch: torch}, "numpy", []string{torch}},
		{"no torch index", Routes{Indexes: []string{pypi}}, "torch", []string{pypi}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.routes.Candidates(tc.project); !slices.Equal(got, tc.want) {
				t.Errorf("Candidates(%q) = %v, want %v", tc.project, got, tc.want)
			}
		})
	}
	if _, err := Start(Routes{Torch: torch, Indexes: []string{pypi}}, WithCacheDir(t.TempDir())); err == nil || !strings.Contains(err.Error(), "TorchOnly") {
		t.Errorf("Start(torch and other indexes, no TorchOnly) = %v, want an error naming TorchOnly", err)
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

// gatedServer serves dir's files whole (no ranges) and, for the wheel
// named gate, sends the first half, then waits until release is closed.
type gatedServer struct {
	dir     string
	gate    string
	release chan struct{}
	sent    atomic.Int64
}

func (s *gatedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := servedPath(s.dir, r)
	b, err := os.ReadFile(p)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	if filepath.Base(p) == s.gate {
		n, _ := w.Write(b[:len(b)/2])
		s.sent.Add(int64(n))
		w.(http.Flusher).Flush()
		<-s.release
		b = b[len(b)/2:]
	}
	n, _ := w.Write(b)
	s.sent.Add(int64(n))
}

// TestProxyStreamsAnUncachedWheel: a client asking for a wheel the cache
// lacks gets its bytes while the proxy is still reading it from upstream
// (one pass: read, hash, cache, send), and the wheel is read from upstream
// once: a second GET and its metadata come from the cache. Offered no
// metadata (OfferMetadata(false), for pip before 23.2), the page lists none.
func TestProxyStreamsAnUncachedWheel(t *testing.T) {
	dir := t.TempDir()
	plainIndex(t, dir, torchSpecs()...)
	const name = "torch-2.6.0+cu124-py3-none-any.whl"
	want, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	srv := &gatedServer{dir: dir, gate: name, release: make(chan struct{})}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	p, err := Start(Routes{Torch: ts.URL + "/"}, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.OfferMetadata(false)
	if code, page := get(t, p.URL()+"torch/"); code != 200 || strings.Contains(string(page), "data-core-metadata") || !strings.Contains(string(page), "#sha256=") {
		t.Errorf("torch page offered no metadata: HTTP %d\n%s\nwant the file with its sha256 and no metadata attributes", code, page)
	}
	_, files, err := p.Project(context.Background(), "torch")
	if err != nil || len(files) != 1 {
		t.Fatalf("Project(torch) = %v %v", files, err)
	}
	// The response and the first half arrive while upstream still holds
	// back the second.
	var resp *http.Response
	first := make([]byte, len(want)/2)
	done := make(chan error, 1)
	go func() {
		var err error
		if resp, err = http.Get(p.FileURL(files[0])); err == nil {
			_, err = io.ReadFull(resp.Body, first)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reading the first half: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(srv.release)
		<-done
		t.Fatal("no byte of the wheel reached the client while upstream was sending it: the proxy does not stream")
	}
	close(srv.release)
	defer resp.Body.Close()
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := append(first, rest...); !bytes.Equal(got, want) {
		t.Fatalf("streamed wheel: %d bytes, not the upstream file's %d", len(got), len(want))
	}
	sent := srv.sent.Load()
	if code, b := get(t, p.FileURL(files[0])); code != 200 || !bytes.Equal(b, want) {
		t.Errorf("second GET: HTTP %d, %d bytes", code, len(b))
	}
	if md := metadataOf(t, p, "torch", name); !strings.Contains(md, "Name: torch") {
		t.Errorf("metadata = %q", md)
	}
	if more := srv.sent.Load() - sent; more != 0 {
		t.Errorf("the second GET and the metadata made upstream send %d more bytes, want 0 (from the cache)", more)
	}
	if st := p.Stats(); st.Downloads != 1 || st.Served != 2 || st.CacheHits != 1 {
		t.Errorf("stats %+v: want 1 download, 2 served, the metadata from the cached wheel", st)
	}
}

// TestProxyStreamCutOnWrongSHA256: a wheel whose bytes are not the ones
// the index's sha256 names reaches the client cut short (the client sees
// an error), the cache keeps nothing and the proxy reports the mismatch.
func TestProxyStreamCutOnWrongSHA256(t *testing.T) {
	dir := t.TempDir()
	plainIndex(t, dir, torchSpecs()...)
	const name = "torch-2.6.0+cu124-py3-none-any.whl"
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff // the same size, other bytes
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(&noRange{dir: dir})
	defer ts.Close()
	cache := t.TempDir()
	p, err := Start(Routes{Torch: ts.URL + "/"}, WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, files, err := p.Project(context.Background(), "torch")
	if err != nil || len(files) != 1 {
		t.Fatalf("Project(torch) = %v %v", files, err)
	}
	resp, err := http.Get(p.FileURL(files[0]))
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil && resp.StatusCode == http.StatusOK {
		t.Fatal("GET of a wheel with the wrong sha256 read to the end without an error")
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "wheels", "*")); len(left) != 0 {
		t.Errorf("the cache kept %v", left)
	}
	if errs := p.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "the index says "+files[0].SHA256) {
		t.Errorf("proxy errors %v, want the sha256 mismatch", errs)
	}
}

// TestProxyOneUpstreamReadForConcurrentAsks: pip's metadata request and a
// GET of the same uncached wheel at once (no ranges upstream, so both need
// the whole file) read it from upstream once between them.
func TestProxyOneUpstreamReadForConcurrentAsks(t *testing.T) {
	dir := t.TempDir()
	plainIndex(t, dir, torchSpecs()...)
	srv := &noRange{dir: dir}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	p, err := Start(Routes{Torch: ts.URL + "/"}, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, files, err := p.Project(context.Background(), "torch")
	if err != nil || len(files) != 1 {
		t.Fatalf("Project(torch) = %v %v", files, err)
	}
	page := srv.sent.Load()
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Go(func() {
			u := p.FileURL(files[0])
			if i%2 == 1 {
				u += ".metadata"
			}
			resp, err := http.Get(u)
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: HTTP %d", i, c)
		}
	}
	if sent := srv.sent.Load() - page; sent < big || sent >= 2*big {
		t.Errorf("upstream sent %d bytes for 2 GETs and 2 metadata asks at once, want the %d-byte wheel once", sent, big)
	}
}
