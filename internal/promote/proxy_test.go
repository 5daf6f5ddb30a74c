package promote_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// countingProxy sits in front of a registry and counts the blob bytes
// clients upload and the blobs the registry mounted across repositories.
type countingProxy struct {
	addr     string
	uploaded atomic.Int64 // request body bytes sent to blob upload endpoints
	mounted  atomic.Int64 // cross-repository mounts the registry accepted (201)
	mu       sync.Mutex
	requests int
}

func newCountingProxy(t testing.TB, registry string) *countingProxy {
	t.Helper()
	target, err := url.Parse("http://" + registry)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests++
		p.mu.Unlock()
		if strings.Contains(r.URL.Path, "/blobs/uploads") && r.Body != nil {
			r.Body = &countingBody{ReadCloser: r.Body, n: &p.uploaded}
		}
		mount := r.Method == http.MethodPost && r.URL.Query().Get("mount") != ""
		rec := &statusRecorder{ResponseWriter: w}
		rp.ServeHTTP(rec, r)
		if mount && rec.status == http.StatusCreated {
			p.mounted.Add(1)
		}
	}))
	t.Cleanup(s.Close)
	p.addr = strings.TrimPrefix(s.URL, "http://")
	return p
}

func (p *countingProxy) reset() {
	p.uploaded.Store(0)
	p.mounted.Store(0)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
