package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"imagectl/internal/exitcode"
)

// Network bounds every registry and index request imagectl sends: how long
// each phase of a request may wait, and how often a transient failure is
// tried again. A zero field takes its default (DefaultNetwork).
//
// There is no total timeout: a wheel or a layer can be gigabytes, so a body
// may take as long as it needs while bytes keep arriving (IdleTimeout).
type Network struct {
	// ConnectTimeout bounds the TCP connect. The default is 30s.
	ConnectTimeout time.Duration
	// TLSTimeout bounds the TLS handshake. The default is 30s.
	TLSTimeout time.Duration
	// ResponseTimeout bounds the wait for the response header once the
	// request (its body included) is sent. The default is 2m: a registry
	// may check a big blob's digest before it answers its upload.
	ResponseTimeout time.Duration
	// IdleTimeout is the longest a response body may send nothing. The
	// default is 1m.
	IdleTimeout time.Duration
	// Attempts is how often a request that failed transiently (5xx, 429,
	// a connection reset, EOF or a stall mid-body) is tried, the
	// first try included. The default is 5; 1 tries once.
	Attempts int
	// Backoff is the first wait between tries; each next one doubles, with
	// jitter, up to MaxBackoff. The default is 500ms.
	Backoff time.Duration
	// MaxBackoff is the longest wait between tries, and the longest
	// Retry-After (429, 503) honored. The default is 30s.
	MaxBackoff time.Duration
}

// DefaultNetwork is the Network a zero Config gets.
func DefaultNetwork() Network {
	return Network{
		ConnectTimeout:  30 * time.Second,
		TLSTimeout:      30 * time.Second,
		ResponseTimeout: 2 * time.Minute,
		IdleTimeout:     time.Minute,
		Attempts:        5,
		Backoff:         500 * time.Millisecond,
		MaxBackoff:      30 * time.Second,
	}
}

// withDefaults fills the zero fields of n from DefaultNetwork.
func (n Network) withDefaults() Network {
	d := DefaultNetwork()
	pick := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&n.ConnectTimeout, d.ConnectTimeout)
	pick(&n.TLSTimeout, d.TLSTimeout)
	pick(&n.ResponseTimeout, d.ResponseTimeout)
	pick(&n.IdleTimeout, d.IdleTimeout)
	pick(&n.Backoff, d.Backoff)
	pick(&n.MaxBackoff, d.MaxBackoff)
	if n.Attempts <= 0 {
		n.Attempts = d.Attempts
	}
	return n
}

// baseTransport is ggcr's default transport with n's connect, TLS and
// response-header timeouts and tlsc.
func baseTransport(n Network, tlsc *tls.Config) *http.Transport {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: n.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = n.TLSTimeout
	t.ResponseHeaderTimeout = n.ResponseTimeout
	t.TLSClientConfig = tlsc
	return t
}

// Phases of a request, as NetError names them.
const (
	PhaseConnect  = "connecting"
	PhaseTLS      = "TLS handshake"
	PhaseSend     = "sending the request"
	PhaseResponse = "waiting for the response header"
	PhaseBody     = "reading the response body"
)

// NetError is a request to a registry or an index that failed on the way:
// it names the host, the phase (PhaseConnect ... PhaseBody) and, for a
// timeout, the limit and the setting that changes it.
type NetError struct {
	Kind  string // "registry" or "index"
	Host  string // host[:port]
	Phase string
	// Timeout is the limit that ran out; 0 when the failure was no timeout.
	Timeout time.Duration
	// Attempts is how often the request was tried, when the tries ran out;
	// 0 when it was not retried here (the caller may).
	Attempts int
	Err      error
}

func (e *NetError) Error() string {
	s := fmt.Sprintf("%s %s: %s: %s", e.Kind, e.Host, e.Phase, Redact(e.Err.Error()))
	if e.Timeout > 0 {
		s = fmt.Sprintf("%s %s: %s: nothing within %s (%s)", e.Kind, e.Host, e.Phase, e.Timeout, timeoutSetting(e.Phase))
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (%d tries)", e.Attempts)
	}
	return s
}

func (e *NetError) Unwrap() error { return e.Err }

// ExitCode implements exitcode.Coder: the service did not answer.
func (e *NetError) ExitCode() int { return exitcode.Unavailable }

// Temporary reports whether trying again may succeed: a reset or an EOF
// may, and so may a body that stalled after it began (it resumes where
// it stopped), unless the tries ran out. A server that did not connect or
// answer within its timeout is not asked again: it fails at once, naming
// the phase.
func (e *NetError) Temporary() bool {
	return e.Attempts == 0 && (e.Timeout == 0 || e.Phase == PhaseBody)
}

func timeoutSetting(phase string) string {
	switch phase {
	case PhaseConnect, PhaseTLS:
		return "--connect-timeout"
	case PhaseBody:
		return "--idle-timeout"
	default:
		return "--response-timeout"
	}
}

// StatusError is a registry or index that kept answering a transient
// status (5xx, 429) until the tries ran out.
type StatusError struct {
	Kind     string
	Host     string
	Method   string
	Path     string
	Status   int
	Attempts int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s answered %s %s with HTTP %d %s (%d tries)", e.Kind, e.Host, e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Attempts)
}

// ExitCode implements exitcode.Coder: the service is unavailable.
func (e *StatusError) ExitCode() int { return exitcode.Unavailable }

// TransientStatus reports whether an HTTP status may go away when the
// request is sent again: 408, 429, 500, 502, 503, 504. 401, 403 and 404
// never do.
func TransientStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Transient reports whether err may go away when the request is sent
// again: a NetError that is Temporary (a reset, EOF or a stall mid-body), a registry
// answer with a transient status or code, a reset or an unexpected EOF. A
// cancelled context, a 401/403/404, a digest mismatch, a request whose
// tries ran out and every other error are permanent.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ae *Error
	if errors.As(err, &ae) {
		return false
	}
	var ne *NetError
	if errors.As(err, &ne) {
		return ne.Temporary()
	}
	var se *StatusError
	if errors.As(err, &se) {
		return false
	}
	var te *transport.Error
	if errors.As(err, &te) {
		return te.Temporary()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if permanentNet(err) {
		return false
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// phased names the phase a request failed in and bounds its body's idle
// time; the errors it returns are *NetError.
type phased struct {
	kind  string
	inner http.RoundTripper
	net   Network
}

// phaseTracker follows a request through httptrace's hooks.
type phaseTracker struct {
	mu    sync.Mutex
	phase string
}

func (p *phaseTracker) set(s string) {
	p.mu.Lock()
	p.phase = s
	p.mu.Unlock()
}

func (p *phaseTracker) get() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.phase
}

func (t *phased) RoundTrip(r *http.Request) (*http.Response, error) {
	pt := &phaseTracker{phase: PhaseConnect}
	trace := &httptrace.ClientTrace{
		TLSHandshakeStart: func() { pt.set(PhaseTLS) },
		GotConn:           func(httptrace.GotConnInfo) { pt.set(PhaseSend) },
		WroteRequest:      func(httptrace.WroteRequestInfo) { pt.set(PhaseResponse) },
	}
	parent := r.Context()
	ctx, cancel := context.WithCancel(httptrace.WithClientTrace(parent, trace))
	resp, err := t.inner.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		if parent.Err() != nil {
			return nil, err // the caller gave up: not the server's fault
		}
		return nil, t.wrap(r, pt.get(), err)
	}
	b := &idleBody{rc: resp.Body, cancel: cancel, idle: t.net.IdleTimeout}
	b.timer = time.AfterFunc(time.Hour, func() {
		b.expired.Store(true)
		cancel()
	})
	b.timer.Stop()
	b.fail = func(err error) error {
		if b.expired.Load() {
			return t.wrap(r, PhaseBody, errIdle)
		}
		if parent.Err() != nil {
			return err
		}
		return t.wrap(r, PhaseBody, err)
	}
	resp.Body = b
	return resp, nil
}

// wrap makes err a *NetError for r's host in phase, with the limit that
// ran out when it is a timeout.
func (t *phased) wrap(r *http.Request, phase string, err error) error {
	var ne *NetError
	if errors.As(err, &ne) || permanentNet(err) {
		return err
	}
	e := &NetError{Kind: t.kind, Host: r.URL.Host, Phase: phase, Err: err}
	var nerr net.Error
	if errors.Is(err, errIdle) || errors.As(err, &nerr) && nerr.Timeout() {
		switch phase {
		case PhaseConnect:
			e.Timeout = t.net.ConnectTimeout
		case PhaseTLS:
			e.Timeout = t.net.TLSTimeout
		case PhaseBody:
			e.Timeout = t.net.IdleTimeout
		default:
			e.Timeout = t.net.ResponseTimeout
		}
	}
	return e
}

var errIdle = errors.New("the body sent nothing")

// permanentNet reports whether err is a failure on the way that sending
// again cannot mend: nothing listens (connection refused, as ggcr, BuildKit
// and curl judge it), a certificate that does not verify, TLS spoken to a
// plain HTTP server. They stay as they are (not a *NetError), so callers
// can tell them (untrusted, ggcr's https-then-http fallback on loopback).
func permanentNet(err error) bool {
	var (
		rh tls.RecordHeaderError
		cv *tls.CertificateVerificationError
		ua x509.UnknownAuthorityError
		hn x509.HostnameError
		ci x509.CertificateInvalidError
	)
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &rh) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}

// idleBody is a response body whose reads may each wait at most idle for
// a byte: past that, the request is cancelled and the read fails with a
// *NetError. Time the reader spends elsewhere (a slow consumer) does not
// count.
type idleBody struct {
	rc      io.ReadCloser
	cancel  context.CancelFunc
	idle    time.Duration
	timer   *time.Timer
	expired atomic.Bool
	fail    func(error) error
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.expired.Load() {
		return 0, b.fail(errIdle)
	}
	b.timer.Reset(b.idle)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	if err != nil && err != io.EOF {
		err = b.fail(err)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel()
	return err
}

// parseRetryAfter reads a Retry-After header (seconds or an HTTP date);
// ok is false when it is absent, unreadable or longer than max.
func parseRetryAfter(v string, max time.Duration) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if s, err := strconv.Atoi(v); err == nil {
		d = time.Duration(s) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = time.Until(at)
	} else {
		return 0, false
	}
	if d < 0 {
		d = 0
	}
	return d, d <= max
}

// RetryOptions are the ggcr options of every registry call. The access's
// transport already retries each replayable request (every GET and HEAD,
// manifests and token exchanges: retrying); ggcr retries only what that
// cannot replay, a streamed blob upload, around the whole upload, with n's
// tries and backoff. A request retried until its tries ran out comes back
// as a permanent error (*NetError or *StatusError), so no request is ever
// retried by both.
func (a *Access) RetryOptions() []remote.Option {
	n := a.net
	return []remote.Option{
		remote.WithRetryBackoff(remote.Backoff{Duration: n.Backoff, Factor: 2, Jitter: 0.5, Steps: n.Attempts}),
		remote.WithRetryPredicate(Transient),
		remote.WithRetryStatusCodes(), // statuses are retrying's
	}
}

// Network is the access's Network, its defaults filled in.
func (a *Access) Network() Network { return a.net }
