package mirror

import (
	"io"
	"net/http"
	"strings"
	"sync"
)

// counter is an http.RoundTripper that counts what is written to a
// registry: blob upload bodies and commits, cross-repository mounts and
// manifest PUTs (OCI distribution spec, "Pushing blobs" and "Pushing
// manifests").
type counter struct {
	rt http.RoundTripper
	mu sync.Mutex
	u  Uploads
}

func (c *counter) uploads() Uploads {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.u
}

func (c *counter) RoundTrip(req *http.Request) (*http.Response, error) {
	p := req.URL.Path
	upload := strings.Contains(p, "/blobs/uploads/") && (req.Method == http.MethodPatch || req.Method == http.MethodPut)
	var body *countingBody
	if upload && req.Body != nil && req.Body != http.NoBody {
		body = &countingBody{ReadCloser: req.Body}
		req = req.Clone(req.Context())
		req.Body = body
	}
	resp, err := c.rt.RoundTrip(req)
	if err != nil || resp.StatusCode >= 300 {
		return resp, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if body != nil {
		c.u.Bytes += body.n
	}
	switch {
	case req.Method == http.MethodPut && strings.Contains(p, "/blobs/uploads/"):
		c.u.Blobs++
	case req.Method == http.MethodPost && strings.HasSuffix(p, "/blobs/uploads/") && req.URL.Query().Get("mount") != "" && resp.StatusCode == http.StatusCreated:
		c.u.Mounted++
	case req.Method == http.MethodPut && strings.Contains(p, "/manifests/"):
		c.u.Manifests++
	}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}
