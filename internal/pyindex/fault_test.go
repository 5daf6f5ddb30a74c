package pyindex

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"imagectl/internal/testenv/faultproxy"
	"imagectl/internal/wheelhouse"
)

// faultyIndex serves a plain PEP 503 index of specs (with range requests)
// behind a fault proxy with rules; it returns the proxy and its URL.
func faultyIndex(t *testing.T, h func(dir string) http.Handler, rules ...faultproxy.Rule) (*faultproxy.Proxy, string, string) {
	t.Helper()
	dir := t.TempDir()
	plainIndex(t, dir, torchSpecs()...)
	ts := httptest.NewServer(h(dir))
	t.Cleanup(ts.Close)
	fp, err := faultproxy.Start(ts.URL, rules...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fp.Close() })
	return fp, "http://" + fp.Addr() + "/", dir
}

func fileServer(dir string) http.Handler { return http.FileServer(http.Dir(dir)) }

// TestProxyNeverCachesAFailure: a page that failed upstream (502) is asked
// for again on the next request, so pip's retry gets the page; a project
// no index has is remembered (one upstream ask).
func TestProxyNeverCachesAFailure(t *testing.T) {
	fp, u, _ := faultyIndex(t, fileServer, faultproxy.Rule{Name: "502", Path: "/torch/", Times: 1, Fault: faultproxy.Fault{Status: 502}})
	p, err := Start(Routes{Torch: u}, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if code, _ := get(t, p.URL()+"torch/"); code != http.StatusBadGateway {
		t.Fatalf("torch page with upstream 502: HTTP %d, want 502", code)
	}
	if code, page := get(t, p.URL()+"torch/"); code != 200 || !strings.Contains(string(page), "torch-2.6.0") {
		t.Errorf("torch page asked again: HTTP %d\n%s\nwant the page (the 502 was cached)", code, page)
	}
	before := fp.Requests()
	for range 2 {
		if code, _ := get(t, p.URL()+"numpy/"); code != http.StatusNotFound {
			t.Errorf("numpy page: HTTP %d, want 404", code)
		}
	}
	if n := fp.Requests() - before; n != 1 {
		t.Errorf("two asks for a project upstream lacks: %d upstream requests, want 1 (not found is cached)", n)
	}
}

// TestProxyOneUpstreamReadPerPage: asks for one page at once share one
// upstream read (singleflight).
func TestProxyOneUpstreamReadPerPage(t *testing.T) {
	fp, u, _ := faultyIndex(t, fileServer, faultproxy.Rule{Name: "slow", Fault: faultproxy.Fault{Delay: 300 * time.Millisecond}})
	p, err := Start(Routes{Torch: u}, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 8 {
		wg.Go(func() {
			if _, files, err := p.Project(context.Background(), "torch"); err == nil && len(files) == 1 {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 8 || fp.Requests() != 1 {
		t.Errorf("8 asks at once: %d answered, %d upstream requests; want 8 and 1", ok.Load(), fp.Requests())
	}
}

// metadataFirstWheel writes a wheel whose METADATA comes first in the
// zip, before payload bytes of incompressible data: reading it by ranges
// takes the tail (the zip directory) and then a block at the start.
func metadataFirstWheel(t *testing.T, path, version string, payload int) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "torch-2.6.0+cu124.dist-info/METADATA", Method: zip.Store})
	if err == nil {
		_, err = fmt.Fprintf(w, "Metadata-Version: 2.1\nName: torch\nVersion: %s\n", version)
	}
	if err == nil {
		w, err = zw.CreateHeader(&zip.FileHeader{Name: "torch/payload.bin", Method: zip.Store})
	}
	if err == nil {
		_, err = io.CopyN(w, rand.Reader, int64(payload))
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = os.WriteFile(path, buf.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestProxyRangeReadsNeverStitch: a wheel replaced upstream between the
// range reads of its zip (tail, then METADATA's block) fails the metadata
// (If-Range: the server answers the new file whole) and caches nothing.
func TestProxyRangeReadsNeverStitch(t *testing.T) {
	dir := t.TempDir()
	const name = "torch-2.6.0+cu124-py3-none-any.whl"
	metadataFirstWheel(t, filepath.Join(dir, name), "2.6.0+cu124", 3*blockSize)
	if _, err := wheelhouse.WritePlainIndex(dir); err != nil {
		t.Fatal(err)
	}
	fs := http.FileServer(http.Dir(dir))
	var replaced atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-Range") != "" && !replaced.Swap(true) {
			// A new upload of the same file name lands now.
			metadataFirstWheel(t, filepath.Join(dir, name), "2.6.0+cu124.post1", 3*blockSize)
			later := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(dir, name), later, later)
		}
		fs.ServeHTTP(w, r)
	}))
	defer ts.Close()
	cache := t.TempDir()
	p, err := Start(Routes{Torch: ts.URL + "/"}, WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, files, err := p.Project(context.Background(), "torch")
	if err != nil || len(files) != 1 {
		t.Fatalf("Project(torch) = %v, %v", files, err)
	}
	code, b := get(t, p.FileURL(files[0])+".metadata")
	if !replaced.Load() {
		t.Fatalf("no block was asked for with If-Range (metadata HTTP %d %q): the test did not reach a second range read", code, b)
	}
	if code == 200 {
		t.Fatalf("metadata of a wheel replaced between its range reads: HTTP 200 %q, want a failure", b)
	}
	if !strings.Contains(string(b), "changed upstream") {
		t.Errorf("metadata failure = %q, want it to say the file changed upstream", b)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "metadata", "*")); len(left) != 0 {
		t.Errorf("the cache kept %v", left)
	}
}

// TestProxyTokenBeyondLoopback: a proxy listening beyond loopback answers
// only URLs with its token; a request without it gets 404 and sends
// nothing upstream (so no credentials either).
func TestProxyTokenBeyondLoopback(t *testing.T) {
	var authed atomic.Int64
	fp, u, _ := faultyIndex(t, fileServer)
	p, err := Start(Routes{Torch: u}, WithAddr(":0"), WithCacheDir(t.TempDir()),
		WithAuth(func(r *http.Request) { authed.Add(1); r.SetBasicAuth("ci", "secret") }))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, port, _ := net.SplitHostPort(p.ln.Addr().String())
	bare := "http://127.0.0.1:" + port
	if strings.HasPrefix(p.URL(), bare+"/simple/") || len(p.token) != 64 {
		t.Fatalf("URL() = %s, token %q: want a 64-hex-digit token in the URL", p.URL(), p.token)
	}
	for _, path := range []string{"/simple/torch/", "/files/x/torch.whl", "/wrong/simple/torch/"} {
		if code, _ := get(t, bare+path); code != http.StatusNotFound {
			t.Errorf("GET %s without the token: HTTP %d, want 404", path, code)
		}
	}
	if fp.Requests() != 0 || authed.Load() != 0 {
		t.Errorf("requests without the token made %d upstream requests, %d with credentials; want none", fp.Requests(), authed.Load())
	}
	withToken := strings.Replace(p.URL(), "[::]", "127.0.0.1", 1)
	if code, page := get(t, withToken+"torch/"); code != 200 || !strings.Contains(string(page), "torch-2.6.0") {
		t.Errorf("GET %storch/ with the token: HTTP %d\n%s", withToken, code, page)
	}
	loop, err := Start(Routes{Torch: u}, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	if loop.token != "" {
		t.Errorf("a proxy on loopback has a token %q", loop.token)
	}
}
