// Package auth is imagectl's one story for credentials and TLS, shared by
// every stage (lock, mirror, build, sign, verify, promote, pin, release):
//
//   - registries: the Docker config ($DOCKER_CONFIG/config.json, else
//     ~/.docker/config.json, with its credential helpers), through ggcr's
//     authn.DefaultKeychain on the Go side and BuildKit's session auth
//     provider for buildkitd's own pulls and pushes;
//   - wheel indexes and other HTTP sources: a netrc file, or credentials
//     moved out of an index URL's userinfo; they reach pip as a BuildKit
//     secret and the build's HTTP fetches as an auth-header secret, never the
//     lock, the LLB, a layer, a log or an error;
//   - TLS: the system trust store plus the CA files given (--ca-file); plain
//     HTTP only for loopback or a registry marked insecure.
//
// A registry or index that refuses the credentials (401/403) is an *Error
// with its own exit code (77), naming the host and the credential source
// tried, never the secret.
package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Config says where credentials and trust come from. The zero Config is the
// Docker config from the environment, the system trust store and no index
// credentials.
type Config struct {
	// CAFiles are PEM files of CA certificates trusted in addition to the
	// system trust store, for registries and indexes alike.
	CAFiles []string
	// Insecure are registries (host or host:port) reached over plain HTTP:
	// every Go-side request to them is sent as http, and buildkitd pushes
	// to them with the exporter's registry.insecure. Loopback registries
	// may be plain HTTP regardless (ggcr tries https, then http).
	Insecure []string
	// NetrcFile holds index credentials (machine/login/password). Empty
	// means none.
	NetrcFile string
	// Network bounds every request: timeouts per phase, retries. Zero
	// fields take DefaultNetwork's values.
	Network Network
}

// Access is a loaded Config: what every stage hands to ggcr, BuildKit and
// the HTTP clients that read indexes. It is safe for concurrent use.
type Access struct {
	cfg       Config
	pool      *x509.CertPool // nil: the system store alone
	index     map[string]Credential
	net       Network
	base      *http.Transport   // TLS: the system store plus the CA files; net's timeouts
	transport http.RoundTripper // registries: base, https turned to http for Insecure hosts, phases named, retrying
	indexRT   http.RoundTripper // indexes: the same, its errors naming an index
}

// Default is New(Config{}): the Docker config, the system trust store, no
// index credentials. It never fails.
func Default() *Access {
	a, err := New(Config{})
	if err != nil {
		panic(err) // a zero Config reads no file
	}
	return a
}

// SetAccess is the body of the stages' WithAccess options: it stores a in
// *dst and refuses a nil Access.
func SetAccess(dst **Access, a *Access) error {
	if a == nil {
		return errors.New("access is nil")
	}
	*dst = a
	return nil
}

// New loads cfg: the CA files and the netrc. A file that cannot be read or
// parsed is an error naming it.
func New(cfg Config) (*Access, error) {
	a := &Access{cfg: cfg, index: map[string]Credential{}, net: cfg.Network.withDefaults()}
	if len(cfg.CAFiles) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		for _, f := range cfg.CAFiles {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("--ca-file: %w", err)
			}
			if !pool.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", f)
			}
		}
		a.pool = pool
	}
	if cfg.NetrcFile != "" {
		creds, err := readNetrc(cfg.NetrcFile)
		if err != nil {
			return nil, err
		}
		a.index = creds
	}
	t := baseTransport(a.net, &tls.Config{RootCAs: a.pool, MinVersion: tls.VersionTLS12})
	a.base = t
	var rt http.RoundTripper = t
	if len(cfg.Insecure) > 0 {
		rt = &plainHTTP{inner: t, hosts: cfg.Insecure}
	}
	// Registries: no plain HTTP beyond loopback unless marked insecure.
	// ggcr sends plain HTTP to RFC 1918 and *.local registries, and pings
	// them over http after https failed; those requests go over https.
	a.transport = &retrying{kind: "registry", net: a.net, inner: &phased{kind: "registry", net: a.net, inner: &httpsOnly{inner: rt, plainOK: a.Insecure}}}
	a.indexRT = &retrying{kind: "index", net: a.net, inner: &phased{kind: "index", net: a.net, inner: rt}}
	return a, nil
}

// plainHTTP sends requests for the hosts marked insecure over plain HTTP
// (ggcr, cosign and the index clients all say https for a registry that is
// not on loopback).
type plainHTTP struct {
	inner http.RoundTripper
	hosts []string
}

func (p *plainHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" || !(slices.Contains(p.hosts, r.URL.Host) || slices.Contains(p.hosts, r.URL.Hostname())) {
		return p.inner.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme = "http"
	return p.inner.RoundTrip(r2)
}

// httpsOnly sends a plain-HTTP registry request over https unless plainOK
// allows its host (loopback, or marked insecure): ggcr's name.Registry
// says http for RFC 1918 addresses and *.local names, and its ping falls
// back to http after https fails; neither a request nor a credential may
// leave the machine in clear text unless the user said so.
type httpsOnly struct {
	inner   http.RoundTripper
	plainOK func(host string) bool
}

func (h *httpsOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "http" || h.plainOK(r.URL.Host) {
		return h.inner.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme = "https"
	return h.inner.RoundTrip(r2)
}

// DockerConfigDir is where the Docker config is read from: $DOCKER_CONFIG,
// else ~/.docker (what docker, ggcr, crane and cosign read).
func DockerConfigDir() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker")
}

// dockerDir is DockerConfigDir() now: ggcr's default keychain reads the
// environment at every call, too.
func (a *Access) dockerDir() string { return DockerConfigDir() }

// CAFiles returns a copy of the PEM files of CAs this access trusts beyond
// the system store (Config.CAFiles).
func (a *Access) CAFiles() []string { return slices.Clone(a.cfg.CAFiles) }

// Keychain is ggcr's default keychain: the Docker config and its
// credential helpers.
func (a *Access) Keychain() authn.Keychain { return authn.DefaultKeychain }

// Transport is the HTTP transport for registries: ggcr's default
// transport trusting the system store and the CA files, with the
// Network's timeouts per phase (errors are *NetError, naming the host and
// the phase) and its retries of transient failures (retrying).
func (a *Access) Transport() http.RoundTripper { return a.transport }

// TLSConfig is the TLS configuration of Transport (the system store plus
// the CA files), for clients that take one, e.g. containerd's resolver.
func (a *Access) TLSConfig() *tls.Config { return a.base.TLSClientConfig.Clone() }

// HTTPClient is the client for index requests (pages, metadata, wheels):
// Transport's trust, timeouts and retries, its errors naming an index. It
// sets no overall timeout (a wheel can be gigabytes; the idle timeout
// bounds a stalled body): callers bound requests with their context.
func (a *Access) HTTPClient() *http.Client {
	return &http.Client{Transport: a.indexRT}
}

// RemoteOptions are the ggcr options every registry call takes: the
// keychain, the transport and the retry options (RetryOptions). Options
// given after them override them.
func (a *Access) RemoteOptions() []remote.Option {
	return append([]remote.Option{remote.WithAuthFromKeychain(a.Keychain()), remote.WithTransport(a.transport)}, a.RetryOptions()...)
}

// Insecure reports whether reg (host or host:port) may be reached over
// plain HTTP: a loopback registry, or one in Config.Insecure.
func (a *Access) Insecure(reg string) bool {
	if slices.Contains(a.cfg.Insecure, reg) {
		return true
	}
	host, _, err := net.SplitHostPort(reg)
	if err != nil {
		host = reg
	}
	if slices.Contains(a.cfg.Insecure, host) {
		return true
	}
	return isLoopback(host)
}

// MarkedInsecure reports whether reg was marked insecure explicitly
// (Config.Insecure), as buildkitd's exporter needs to be told.
func (a *Access) MarkedInsecure(reg string) bool {
	return slices.Contains(a.cfg.Insecure, reg)
}

// RegistryOf is the registry host of a reference or repository string
// ("localhost:5000/ml/x:tag" -> "localhost:5000"), as ggcr parses it
// (name.ParseReference(s).Context().RegistryStr()); "" when s is not one.
// It is the host NameOptions and every per-registry setting are keyed by.
func RegistryOf(s string) string {
	r, err := name.ParseReference(s)
	if err != nil {
		return ""
	}
	return r.Context().RegistryStr()
}

// NameOptions are the name options for references to reg: name.Insecure
// for a registry marked insecure (loopback needs none: ggcr already tries
// https first, then http, there).
func (a *Access) NameOptions(reg string) []name.Option {
	if a.MarkedInsecure(reg) {
		return []name.Option{name.Insecure}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
