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
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"imagectl/internal/exitcode"
)

// UnreachableError is a registry or index that did not answer.
type UnreachableError struct {
	Kind string // "registry" or "index"
	Host string
	Err  error
}

func (e *UnreachableError) Error() string {
	msg := e.Err.Error()
	var ne *NetError
	if errors.As(e.Err, &ne) && ne.Kind == e.Kind && ne.Host == e.Host {
		// Name the host once: "registry H is unreachable: connecting: ...".
		msg = strings.Replace(msg, ne.Kind+" "+ne.Host+": ", "", 1)
	}
	return fmt.Sprintf("%s %s is unreachable: %v", e.Kind, e.Host, Redact(msg))
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// ExitCode implements exitcode.Coder.
func (e *UnreachableError) ExitCode() int { return exitcode.Unavailable }

// untrusted turns a certificate that does not verify into an error that
// says what to do; nil when err is no such failure.
func untrusted(kind, host string, err error) error {
	var ua x509.UnknownAuthorityError
	var cv *tls.CertificateVerificationError
	if errors.As(err, &ua) || errors.As(err, &cv) {
		return fmt.Errorf("%s %s: its TLS certificate does not verify against the system trust store and the --ca-file CAs (give the CA that signed it with --ca-file): %v", kind, host, Redact(err.Error()))
	}
	return nil
}

// PingRegistry checks, within ctx, that reg answers /v2/ and accepts the
// keychain's credentials for scopes (e.g. "repository:ml/app:push,pull"),
// through ggcr's transport (challenge, basic or token exchange, https then
// http only for loopback or insecure registries). It returns an *Error for
// a 401/403 and an *UnreachableError when the registry does not answer.
func (a *Access) PingRegistry(ctx context.Context, reg name.Registry, scopes ...string) error {
	_, err := a.RegistryTransport(ctx, reg, scopes...)
	return err
}

// RegistryTransport is PingRegistry that also returns the transport it
// authenticated for scopes (a ggcr *transport.Wrapper): ggcr calls on those
// scopes given it with remote.WithTransport send their requests at once,
// without pinging /v2/ and asking for a token again.
func (a *Access) RegistryTransport(ctx context.Context, reg name.Registry, scopes ...string) (http.RoundTripper, error) {
	host := reg.RegistryStr()
	if a.Insecure(host) && reg.Scheme() != "http" {
		r, err := name.NewRegistry(host, name.Insecure)
		if err == nil {
			reg = r
		}
	}
	cred, err := authn.Resolve(ctx, a.Keychain(), reg)
	if err != nil {
		return nil, fmt.Errorf("reading the credentials for %s from %s: %w", host, a.RegistrySource(host), err)
	}
	t, err := transport.NewWithContext(ctx, reg, cred, a.transport, scopes)
	if err != nil {
		return nil, a.pingError(ctx, host, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/v2/", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: t}).Do(req)
	if err != nil {
		return nil, a.pingError(ctx, host, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if Denied(resp.StatusCode) {
		return nil, &Error{Kind: "registry", Host: host, Status: resp.StatusCode, Source: a.RegistrySource(host)}
	}
	return t, nil
}

func (a *Access) pingError(ctx context.Context, host string, err error) error {
	if u := untrusted("registry", host, err); u != nil {
		return u
	}
	var te *transport.Error
	if errors.As(err, &te) {
		if Denied(te.StatusCode) {
			return &Error{Kind: "registry", Host: host, Status: te.StatusCode, Source: a.RegistrySource(host), Err: err}
		}
		if te.StatusCode < 500 {
			return fmt.Errorf("registry %s: %w", host, err)
		}
	}
	if u := Unreachable("registry", host, err); u != nil {
		if ctx.Err() != nil {
			u.Err = fmt.Errorf("no answer in time: %w", u.Err)
		}
		return u
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer in time: %w", err)
	}
	return &UnreachableError{Kind: "registry", Host: host, Err: err}
}

// Unreachable returns err, a failed request to host, as an
// *UnreachableError that names the phase and the host once (ggcr tries
// https, then http on loopback, and joins both raw errors); nil when err
// is no failure on the way (a status, a bad manifest, ...).
func Unreachable(kind, host string, err error) *UnreachableError {
	var ne *NetError
	var op *net.OpError
	switch {
	case errors.As(err, &ne):
		return &UnreachableError{Kind: kind, Host: host, Err: ne}
	case errors.As(err, &op) && op.Op == "dial":
		// Nothing listens: not retried, so no NetError yet.
		return &UnreachableError{Kind: kind, Host: host, Err: &NetError{Kind: kind, Host: host, Phase: PhaseConnect, Err: op.Err}}
	}
	return nil
}

// CheckIndex sends a HEAD to rawURL with the index credential for its host
// (Basic auth), through Transport. A 401/403 is an *Error naming the index
// and the credential source; no answer is an *UnreachableError. Other
// statuses are returned as *http.Response for the caller to judge (the
// body is closed).
func (a *Access) CheckIndex(ctx context.Context, rawURL string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("index URL %s: %w", Redact(rawURL), err)
	}
	host := req.URL.Host
	if h := a.AuthHeader(rawURL); h != "" {
		req.Header.Set("Authorization", h)
	}
	resp, err := a.HTTPClient().Do(req)
	if err != nil {
		if u := untrusted("index", host, err); u != nil {
			return nil, u
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer in time: %w", ctx.Err())
		}
		// url.Error carries the URL: drop any userinfo from it.
		return nil, &UnreachableError{Kind: "index", Host: host, Err: errors.New(Redact(err.Error()))}
	}
	resp.Body.Close()
	if Denied(resp.StatusCode) {
		return resp, &Error{Kind: "index", Host: host, Status: resp.StatusCode, Source: a.IndexSource(rawURL)}
	}
	return resp, nil
}
