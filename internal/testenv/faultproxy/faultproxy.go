// Package faultproxy is an HTTP reverse proxy on loopback that injects the
// faults a month of real traffic brings, for tests: a burst of 5xx (with
// or without Retry-After), a reset connection, latency, a body cut short
// (EOF mid-body), a body or a response header that stalls. Tests put it in
// front of the wheel index or the registry and point imagectl, buildkitd
// and cosign at it.
//
// Requests are forwarded with their Host header, so a registry's upload
// locations and an index's absolute links keep naming the proxy.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is what the proxy does to a request a Rule matches. Exactly one of
// Status, Reset, Cut, StallBody and StallHeader should be set; Delay may
// come with any (or alone: latency).
type Fault struct {
	// Status answers with this status, upstream never asked.
	Status int
	// RetryAfter is the Retry-After header sent with Status.
	RetryAfter string
	// Reset resets the connection (RST) before anything is answered.
	Reset bool
	// Delay waits this long before the request goes upstream.
	Delay time.Duration
	// Cut forwards the response, sends half its body and closes the
	// connection: the client reads an unexpected EOF.
	Cut bool
	// StallBody forwards the response, sends half its body, then sends
	// nothing for this long before it closes the connection.
	StallBody time.Duration
	// StallHeader sends nothing for this long, then closes the connection.
	StallHeader time.Duration
}

// Rule injects its Fault into the requests it matches.
type Rule struct {
	// Name counts the faults injected (Proxy.Fired).
	Name string
	// Methods are the methods matched; none matches every method.
	Methods []string
	// Path matches request paths that contain it; "" matches all.
	Path string
	// Match, when set, must also accept the request.
	Match func(*http.Request) bool
	// Times is how often the fault is injected; 0 is always (a
	// permanent fault).
	Times int
	// PerPath counts Times for each path (and method) of its own: "502
	// once to each path".
	PerPath bool
	Fault
}

func (r *Rule) matches(req *http.Request) bool {
	if len(r.Methods) > 0 {
		ok := false
		for _, m := range r.Methods {
			ok = ok || m == req.Method
		}
		if !ok {
			return false
		}
	}
	if r.Match != nil && !r.Match(req) {
		return false
	}
	return r.Path == "" || strings.Contains(req.URL.Path, r.Path)
}

// Proxy is a running fault proxy.
type Proxy struct {
	upstream *url.URL
	ln       net.Listener
	srv      *http.Server
	rt       http.RoundTripper
	done     chan struct{}

	mu      sync.Mutex
	latency time.Duration
	rules   []Rule
	seen    map[string]int // rule name + key -> faults injected
	fired   map[string]int // rule name -> faults injected
	reqs    int
}

// Start serves a proxy to upstream (http://host:port) on 127.0.0.1:0.
func Start(upstream string, rules ...Rule) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: upstream %q is not a URL", upstream)
	}
	if u.Scheme == "" {
		u.Scheme = "http"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		upstream: u, ln: ln, done: make(chan struct{}),
		rt:   &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 32, DisableCompression: true},
		seen: map[string]int{}, fired: map[string]int{},
	}
	p.SetRules(rules...)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(ln) //nolint:errcheck // ErrServerClosed after Close
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetRules replaces the rules; the counts stay.
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append([]Rule(nil), rules...)
}

// SetLatency delays every request by d before its rule (if any) applies.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Fired is how often the rule named name injected its fault.
func (p *Proxy) Fired(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fired[name]
}

// Requests is how many requests the proxy got.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reqs
}

// Close stops the proxy and ends every stall.
func (p *Proxy) Close() error {
	close(p.done)
	return p.srv.Close()
}

// pick returns the fault for req (nil when none) and counts it, and the
// latency.
func (p *Proxy) pick(req *http.Request) (*Fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs++
	for i := range p.rules {
		r := &p.rules[i]
		if !r.matches(req) {
			continue
		}
		key := r.Name
		if r.PerPath {
			key += "\x00" + req.Method + " " + req.URL.Path
		}
		if r.Times > 0 && p.seen[key] >= r.Times {
			continue
		}
		p.seen[key]++
		p.fired[r.Name]++
		f := r.Fault
		return &f, p.latency
	}
	return nil, p.latency
}

func (p *Proxy) wait(req *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.Context().Done():
	case <-p.done:
	}
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	f, latency := p.pick(req)
	if f == nil {
		f = &Fault{}
	}
	if d := latency + f.Delay; d > 0 {
		p.wait(req, d)
	}
	switch {
	case f.Reset:
		reset(w)
		return
	case f.StallHeader > 0:
		p.wait(req, f.StallHeader)
		panic(http.ErrAbortHandler)
	case f.Status != 0:
		if req.Body != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 64<<20))
		}
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		if f.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="faultproxy"`)
		}
		http.Error(w, fmt.Sprintf("faultproxy: injected %d", f.Status), f.Status)
		return
	}
	p.forward(w, req, f)
}

// reset closes the client's connection with an RST.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (p *Proxy) forward(w http.ResponseWriter, req *http.Request, f *Fault) {
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.Host = req.Host
	if req.ContentLength == 0 {
		out.Body = nil
	}
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	if resp.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
	if !f.Cut && f.StallBody == 0 || req.Method == http.MethodHead {
		_, _ = io.Copy(flushWriter{w}, resp.Body)
		return
	}
	half := resp.ContentLength / 2
	if half <= 0 {
		half = 1
	}
	if _, err := io.CopyN(w, resp.Body, half); err != nil && !errors.Is(err, io.EOF) {
		panic(http.ErrAbortHandler)
	}
	_ = http.NewResponseController(w).Flush()
	if f.StallBody > 0 {
		p.wait(req, f.StallBody)
	}
	panic(http.ErrAbortHandler)
}

// flushWriter flushes after each write, so a streamed body moves as it
// arrives.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	_ = http.NewResponseController(f.w).Flush()
	return n, err
}
