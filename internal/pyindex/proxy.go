package pyindex

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"imagectl/internal/pep"
)

// Routes say which index each project comes from: exactly one, so a
// project name published on two indexes can never be taken from the wrong
// one (pip's --extra-index-url merges all indexes and takes the best
// version from any of them: dependency confusion).
type Routes struct {
	// Torch is the torch variant's index (e.g. https://download.pytorch.org/whl/cu124).
	// When set, the projects TorchOnly names come from it alone, and
	// nothing else does.
	Torch string
	// TorchOnly reports whether a project (normalized name) comes from
	// Torch alone. Which projects those are is the compatibility
	// catalog's rule, per torch variant (compat.Wheel.FromTorchIndex);
	// Start requires it when Torch and Indexes are both set.
	TorchOnly func(project string) bool
	// Indexes are the other indexes, in order: a project comes from the
	// first one that has it (uv's "first-index" strategy), never from two.
	// Without any, every project comes from Torch (one index for all, as a
	// spec without pip_indexes asks).
	Indexes []string
}

// Candidates are the indexes asked for project name, in order.
func (r Routes) Candidates(name string) []string {
	if r.Torch != "" && (len(r.Indexes) == 0 || r.TorchOnly(pep.Normalize(name))) {
		return []string{r.Torch}
	}
	return r.Indexes
}

// check reports routes Candidates cannot use.
func (r Routes) check() error {
	if r.Torch != "" && len(r.Indexes) > 0 && r.TorchOnly == nil {
		return errors.New("routes: a torch index besides other indexes needs TorchOnly (the catalog's torch_index_projects)")
	}
	return nil
}

// Option configures a Proxy.
type Option func(*options)

type options struct {
	addr     string
	client   *http.Client
	auth     func(*http.Request)
	cacheDir string
}

// WithAddr sets the listen address. The default is 127.0.0.1:0 (loopback,
// a free port): the lock's resolution steps reach it through the BuildKit
// worker's host network. On an address that is not loopback (":8444",
// "10.0.0.5:8444") the proxy answers only URLs that carry a random token
// it makes at start (URL and FileURL include it): anyone else who reaches
// the port gets 404, and no upstream request, so never the credentials
// WithAuth adds.
func WithAddr(addr string) Option { return func(o *options) { o.addr = addr } }

// WithHTTPClient sets the client for upstream requests. The default is
// http.DefaultClient, which has no timeouts and no retries: imagectl gives
// auth.Access.HTTPClient, which has both.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

// WithAuth sets a function that adds credentials to each upstream request
// (e.g. basic auth from a netrc for the request's host). The default adds none.
func WithAuth(f func(*http.Request)) Option { return func(o *options) { o.auth = f } }

// WithCacheDir sets where wheel metadata is cached, by the wheel's sha256.
// The default is $XDG_CACHE_HOME/imagectl/pyindex (os.UserCacheDir).
func WithCacheDir(dir string) Option { return func(o *options) { o.cacheDir = dir } }

// DefaultCacheDir is the metadata cache WithCacheDir defaults to.
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "imagectl", "pyindex")
}

// Served is a file the proxy listed: where it really is.
type Served struct {
	File
	// Project is the normalized project name.
	Project string
	// Index is the upstream index it was listed by.
	Index string
}

// Proxy serves the routed view of Routes as one PEP 503 index with PEP 658
// metadata for every wheel that has a sha256.
type Proxy struct {
	routes Routes
	c      *client
	ln     net.Listener
	srv    *http.Server

	// noMetadata: list no PEP 658 metadata (OfferMetadata).
	noMetadata atomic.Bool

	// token prefixes every path the proxy answers ("" on loopback).
	token string
	// ctx is every upstream read's: Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	// flight makes concurrent asks for one project one upstream read.
	flight singleflight.Group

	mu    sync.Mutex
	files map[string]Served // by key (see fileKey)
	pages map[string]page   // by project: found, or not found; never a failure
	errs  []error
}

type page struct {
	index string
	files []File
	err   error
}

// Start serves routes on WithAddr's address until Close.
func Start(routes Routes, opts ...Option) (*Proxy, error) {
	o := &options{addr: "127.0.0.1:0", client: http.DefaultClient}
	for _, opt := range opts {
		opt(o)
	}
	if o.cacheDir == "" {
		o.cacheDir = DefaultCacheDir()
	}
	if err := routes.check(); err != nil {
		return nil, fmt.Errorf("index proxy: %w", err)
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("index proxy: listening on %s: %w", o.addr, err)
	}
	p := &Proxy{
		routes: routes,
		c:      &client{http: o.client, auth: o.auth, cacheDir: o.cacheDir},
		ln:     ln,
		files:  map[string]Served{},
		pages:  map[string]page{},
	}
	if !loopback(ln.Addr()) {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			ln.Close()
			return nil, fmt.Errorf("index proxy: making its token: %w", err)
		}
		p.token = hex.EncodeToString(b[:])
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, BaseContext: func(net.Listener) context.Context { return p.ctx }}
	go p.srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed after Close
	return p, nil
}

// loopback reports whether addr listens on loopback only.
func loopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// root is the proxy's URL up to its paths: http://ADDR, then /TOKEN when
// it listens beyond loopback.
func (p *Proxy) root() string {
	r := "http://" + p.ln.Addr().String()
	if p.token != "" {
		r += "/" + p.token
	}
	return r
}

// URL is the index URL to give pip: http://ADDR/simple/ (with the token:
// http://ADDR/TOKEN/simple/).
func (p *Proxy) URL() string { return p.root() + "/simple/" }

// Close stops the server and cancels the upstream reads in flight.
func (p *Proxy) Close() error {
	p.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

// OfferMetadata sets whether the pages the proxy serves from now on list
// PEP 658 metadata for their wheels (the default). pip before 23.2 reads
// a wheel whose metadata it took from the index twice at the end of
// `install --dry-run` (pypa/pip#11847): with such a pip the proxy offers
// none, pip reads each wheel it considers once, and the proxy streams the
// first read from upstream as it caches it.
func (p *Proxy) OfferMetadata(on bool) { p.noMetadata.Store(!on) }

// Stats is what was fetched from upstream so far.
func (p *Proxy) Stats() Stats { return p.c.n.snapshot() }

// Errors are the upstream failures the proxy answered pip with (5xx), so a
// failed resolution can say which index failed and how.
func (p *Proxy) Errors() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.errs)
}

// FileURL is where the proxy serves f (a file Project listed).
func (p *Proxy) FileURL(f File) string {
	return p.root() + "/files/" + fileKey(f) + "/" + urlPathEscape(f.Filename)
}

// Lookup maps a file URL pip got from the proxy to the upstream file.
func (p *Proxy) Lookup(rawURL string) (Served, bool) {
	key, _, ok := strings.Cut(strings.TrimPrefix(rawURL, p.root()+"/files/"), "/")
	if !ok {
		return Served{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.files[key]
	return s, ok
}

// Project returns the routed files of project name and the index that
// gave them: the torch index for the PyTorch projects, else the first of
// the other indexes that has the project.
func (p *Proxy) Project(ctx context.Context, name string) (string, []File, error) {
	n := pep.Normalize(name)
	p.mu.Lock()
	pg, ok := p.pages[n]
	p.mu.Unlock()
	if ok {
		return pg.index, pg.files, pg.err
	}
	// One upstream read for every ask at once; it runs on the proxy's
	// context (not one asker's), so an asker that gives up fails no other.
	ch := p.flight.DoChan(n, func() (any, error) {
		pg := p.route(p.ctx, n)
		if pg.err == nil || errors.Is(pg.err, ErrNotFound) {
			// Only an answer is kept: the project's files, or that no
			// index has it. A failure (5xx, a timeout, a reset) is asked
			// again next time: pip's own retry may then succeed.
			p.mu.Lock()
			p.pages[n] = pg
			for _, f := range pg.files {
				p.files[fileKey(f)] = Served{File: f, Project: n, Index: pg.index}
			}
			p.mu.Unlock()
		}
		return pg, nil
	})
	select {
	case r := <-ch:
		pg := r.Val.(page)
		return pg.index, pg.files, pg.err
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
}

func (p *Proxy) route(ctx context.Context, n string) page {
	cands := p.routes.Candidates(n)
	if len(cands) == 0 {
		return page{err: fmt.Errorf("project %s: no index to take it from", n)}
	}
	for _, ix := range cands {
		files, size, err := p.c.fetchPage(ctx, ix, n)
		p.c.n.pages.Add(1)
		p.c.n.pageBytes.Add(size)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return page{index: ix, err: err}
		}
		return page{index: ix, files: files}
	}
	return page{err: fmt.Errorf("project %s: %w on %s", n, ErrNotFound, strings.Join(redactAll(cands), ", "))}
}

// fileKey names a file in the proxy's URLs: its sha256, or a hash of its
// URL when the index gives none.
func fileKey(f File) string {
	if pep.IsSHA256(f.SHA256) {
		return f.SHA256
	}
	s := sha256.Sum256([]byte(f.URL))
	return "u" + hex.EncodeToString(s[:16])
}

func urlPathEscape(s string) string {
	return strings.NewReplacer("%", "%25", "#", "%23", "?", "%3F", "+", "%2B", " ", "%20").Replace(s)
}

func redactAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = redactURL(x)
	}
	return out
}
