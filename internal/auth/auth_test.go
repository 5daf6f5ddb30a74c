package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
)

const (
	user = "ci"
	pass = "s3cret-registry-pw"
)

// tlsRegistry is ggcr's in-process registry behind basic auth over TLS
// (httptest's own CA), the shape of a private registry. It returns the
// host:port and the CA as a PEM file.
func tlsRegistry(t *testing.T) (host, caFile string) {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(caFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(s.URL, "https://"), caFile
}

// dockerConfig writes a Docker config with an auths entry for host (none
// when login is empty) and points $DOCKER_CONFIG at it.
func dockerConfig(t *testing.T, host, login, password string) string {
	t.Helper()
	dir := t.TempDir()
	auths := map[string]any{}
	if login != "" {
		auths[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(login + ":" + password))}
	}
	b, _ := json.Marshal(map[string]any{"auths": auths})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	return filepath.Join(dir, "config.json")
}

func TestPingRegistry(t *testing.T) {
	host, ca := tlsRegistry(t)
	reg, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		login, pw   string
		ca          bool
		wantStatus  int    // 0: no *Error
		wantInError string // "" with wantStatus 0: success
	}{
		{name: "credentials and CA", login: user, pw: pass, ca: true},
		{name: "no credentials", ca: true, wantStatus: 401, wantInError: "no entry for " + host},
		{name: "wrong password", login: user, pw: "wrong", ca: true, wantStatus: 401, wantInError: "auths entry for " + host},
		{name: "CA not given", login: user, pw: pass, wantInError: "--ca-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := dockerConfig(t, host, tc.login, tc.pw)
			c := Config{}
			if tc.ca {
				c.CAFiles = []string{ca}
			}
			a, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			err = a.PingRegistry(context.Background(), reg, reg.Scope("pull"))
			if tc.wantInError == "" {
				if err != nil {
					t.Fatalf("PingRegistry() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantInError) {
				t.Fatalf("PingRegistry() = %v, want an error containing %q", err, tc.wantInError)
			}
			if strings.Contains(err.Error(), pass) {
				t.Errorf("error %q contains the password", err)
			}
			var ae *Error
			if tc.wantStatus == 0 {
				if errors.As(err, &ae) {
					t.Errorf("PingRegistry() = %v, want no *Error", err)
				}
				return
			}
			if !errors.As(err, &ae) || ae.Status != tc.wantStatus || ae.Host != host || !strings.Contains(ae.Source, cfg) {
				t.Fatalf("PingRegistry() = %#v, want *Error{Host: %s, Status: %d} naming %s", err, host, tc.wantStatus, cfg)
			}
			if exitcode.Code(err) != exitcode.AuthFailed {
				t.Errorf("exit code %d, want %d", exitcode.Code(err), exitcode.AuthFailed)
			}
		})
	}
}

// TestRemoteOptionsAndClassify: the access's options push and read through
// the TLS registry with the Docker config's credentials; without them the
// 401 classifies as an *Error naming the registry.
func TestRemoteOptionsAndClassify(t *testing.T) {
	host, ca := tlsRegistry(t)
	a, err := New(Config{CAFiles: []string{ca}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/ml/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	dockerConfig(t, host, user, pass)
	if err := remote.Write(ref, img, a.RemoteOptions()...); err != nil {
		t.Fatalf("remote.Write with credentials = %v", err)
	}
	if _, err := remote.Head(ref, a.RemoteOptions()...); err != nil {
		t.Fatalf("remote.Head with credentials = %v", err)
	}
	cfg := dockerConfig(t, host, "", "")
	_, err = remote.Head(ref, a.RemoteOptions()...)
	if err == nil {
		t.Fatal("remote.Head without credentials succeeded")
	}
	got := a.Classify(err)
	var ae *Error
	if !errors.As(got, &ae) || ae.Host != host || ae.Kind != "registry" || ae.Status != 401 || !strings.Contains(got.Error(), cfg) {
		t.Errorf("Classify(%v) = %v, want a registry *Error for %s naming %s", err, got, host, cfg)
	}
	if other := errors.New("boom"); a.Classify(other) != other {
		t.Errorf("Classify(boom) changed the error")
	}
}

func TestNetrc(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "netrc")
	content := "# creds\nmachine idx.example login alice password pw1\nmachine other.example\n  login bob\n  password pw2\ndefault login anon password x\n"
	if err := os.WriteFile(good, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{NetrcFile: good})
	if err != nil {
		t.Fatalf("New(netrc) = %v", err)
	}
	for _, tc := range []struct {
		url, login, pw string
		ok             bool
	}{
		{"https://idx.example/simple/", "alice", "pw1", true},
		{"https://idx.example:8443/simple/", "alice", "pw1", true}, // netrc machines have no port
		{"http://other.example/files/x.whl", "bob", "pw2", true},
		{"https://unknown.example/simple/", "", "", false}, // "default" is not used
	} {
		c, ok := a.IndexCredential(tc.url)
		if ok != tc.ok || c.Login != tc.login || c.Password != tc.pw {
			t.Errorf("IndexCredential(%s) = %+v, %v; want %s/%s, %v", tc.url, c, ok, tc.login, tc.pw, tc.ok)
		}
		if ok && c.Source != "netrc "+good {
			t.Errorf("IndexCredential(%s).Source = %q, want the netrc named", tc.url, c.Source)
		}
	}
	// An exact host:port credential wins over the host's netrc entry.
	b := a.WithIndexCredential("idx.example:8443", Credential{Login: "carol", Password: "pw3", Source: "url"})
	if c, _ := b.IndexCredential("https://idx.example:8443/simple/"); c.Login != "carol" {
		t.Errorf("host:port credential = %+v, want carol", c)
	}
	if c, _ := a.IndexCredential("https://idx.example:8443/simple/"); c.Login != "alice" {
		t.Errorf("WithIndexCredential changed the original access: %+v", c)
	}
	// The rendered netrc (pip's /root/.netrc) parses back to the same entries.
	rendered := filepath.Join(dir, "rendered")
	if err := os.WriteFile(rendered, b.Netrc(), 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := readNetrc(rendered)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for h, c := range back {
		got[h] = c.Login + ":" + c.Password
	}
	want := map[string]string{"idx.example": "carol:pw3", "other.example": "bob:pw2"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Netrc() round trip (-want +got):\n%s\n%s", d, b.Netrc())
	}

	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("machine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{NetrcFile: bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("New(truncated netrc) = %v, want an error naming %s", err, bad)
	}
	if _, err := New(Config{NetrcFile: filepath.Join(dir, "missing")}); err == nil {
		t.Error("New(missing netrc) succeeded")
	}
}

func TestSplitUserinfoAndRedact(t *testing.T) {
	clean, c, err := SplitUserinfo("https://bob:pw%40x@idx.example:8443/simple/")
	if err != nil || clean != "https://idx.example:8443/simple/" || c == nil || c.Login != "bob" || c.Password != "pw@x" {
		t.Errorf("SplitUserinfo = %q, %+v, %v", clean, c, err)
	}
	if clean, c, err := SplitUserinfo("https://idx.example/simple/"); err != nil || c != nil || clean != "https://idx.example/simple/" {
		t.Errorf("SplitUserinfo(no userinfo) = %q, %+v, %v", clean, c, err)
	}
	in := "Looking in indexes: https://user:s3cret@idx.example/simple/, http://127.0.0.1:8000/simple/"
	if got := Redact(in); strings.Contains(got, "s3cret") || !strings.Contains(got, "https://***@idx.example/simple/") || !strings.Contains(got, "http://127.0.0.1:8000/simple/") {
		t.Errorf("Redact(%q) = %q", in, got)
	}
}

// TestCheckIndex: an index behind basic auth over TLS answers with the
// netrc's credential; without it the 401 is an *Error naming the index and
// the netrc, never the password.
func TestCheckIndex(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Length", "42")
	}))
	defer s.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	netrc := filepath.Join(dir, "netrc")
	if err := os.WriteFile(netrc, []byte("machine 127.0.0.1 login "+user+" password "+pass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	with, err := New(Config{CAFiles: []string{ca}, NetrcFile: netrc})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := with.CheckIndex(context.Background(), s.URL+"/simple/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CheckIndex(with netrc) = %v, %v", resp, err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("machine elsewhere.example login x password y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	without, err := New(Config{CAFiles: []string{ca}, NetrcFile: other})
	if err != nil {
		t.Fatal(err)
	}
	_, err = without.CheckIndex(context.Background(), s.URL+"/simple/")
	var ae *Error
	host := strings.TrimPrefix(s.URL, "https://")
	if !errors.As(err, &ae) || ae.Kind != "index" || ae.Host != host || !strings.Contains(err.Error(), other) {
		t.Fatalf("CheckIndex(no credential) = %v, want an index *Error for %s naming %s", err, host, other)
	}
	if _, err := Default().CheckIndex(context.Background(), s.URL+"/simple/"); err == nil || !strings.Contains(err.Error(), "--ca-file") {
		t.Errorf("CheckIndex(untrusted CA) = %v, want a hint to --ca-file", err)
	}
}

func TestHTTPAuthSecret(t *testing.T) {
	dir := t.TempDir()
	netrc := filepath.Join(dir, "netrc")
	if err := os.WriteFile(netrc, []byte("machine idx.example login alice password pw1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{NetrcFile: netrc})
	if err != nil {
		t.Fatal(err)
	}
	id, v, ok := a.HTTPAuthSecret("https://idx.example:8443/files/x.whl")
	if !ok || id != "imagectl-http-auth-idx.example" || string(v) != "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:pw1")) {
		t.Errorf("HTTPAuthSecret = %q, %q, %v", id, v, ok)
	}
	if strings.Contains(id, "pw1") {
		t.Errorf("secret ID %q carries the password", id)
	}
	if _, _, ok := a.HTTPAuthSecret("https://other.example/x.whl"); ok {
		t.Error("HTTPAuthSecret for a host without a credential")
	}
}

// TestInsecureRegistry: a registry marked insecure is reached over plain
// HTTP by every request of the access, also one that says https.
func TestInsecureRegistry(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer s.Close()
	host := strings.TrimPrefix(s.URL, "http://")
	a, err := New(Config{Insecure: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.HTTPClient().Get("https://" + host + "/v2/")
	if err != nil || resp.StatusCode != http.StatusTeapot {
		t.Fatalf("GET https://%s/v2/ through an access that marks it insecure = %v, %v; want the plain-HTTP server's 418", host, resp, err)
	}
	resp.Body.Close()
	if _, err := Default().HTTPClient().Get("https://" + host + "/v2/"); err == nil {
		t.Error("an access without the mark reached the plain-HTTP server over https")
	}
	if !a.MarkedInsecure(host) || Default().MarkedInsecure(host) {
		t.Error("MarkedInsecure does not follow Config.Insecure")
	}
}

// TestSetAccess: what every stage's WithAccess does: a nil Access is
// refused and leaves the field as it was; another is stored.
func TestSetAccess(t *testing.T) {
	def := Default()
	field := def
	if err := SetAccess(&field, nil); err == nil || field != def {
		t.Fatalf("SetAccess(nil) = %v, field changed: %v; want an error and the field kept", err, field != def)
	}
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetAccess(&field, a); err != nil || field != a {
		t.Fatalf("SetAccess(a) = %v, field is a: %v; want nil and a stored", err, field == a)
	}
}

// NotFound is a registry's 404 only, wrapped or not: not a 401, not a 5xx,
// not an error without a registry answer.
func TestNotFound(t *testing.T) {
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer s.Close()
	missing, err := name.ParseReference(strings.TrimPrefix(s.URL, "http://") + "/nothing:here")
	if err != nil {
		t.Fatal(err)
	}
	_, err404 := remote.Get(missing)
	if !NotFound(err404) || !NotFound(fmt.Errorf("reading: %w", err404)) {
		t.Errorf("NotFound(%v) = false, want true (also wrapped)", err404)
	}
	for _, status := range []int{http.StatusUnauthorized, http.StatusInternalServerError} {
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
		ref, err := name.ParseReference(strings.TrimPrefix(bad.URL, "http://") + "/demo:1")
		if err != nil {
			t.Fatal(err)
		}
		_, err = remote.Get(ref, remote.WithRetryBackoff(remote.Backoff{Steps: 1}))
		bad.Close()
		if err == nil || NotFound(err) {
			t.Errorf("status %d: NotFound(%v) = true, want false", status, err)
		}
	}
	if NotFound(nil) || NotFound(errors.New("no such thing")) {
		t.Errorf("NotFound of nil or a plain error = true")
	}
}

// TestPingUnreachableOnce: a loopback registry that does not answer is
// pinged over https and http; the error names the phase and the host once,
// not both raw dial errors.
func TestPingUnreachableOnce(t *testing.T) {
	reg, err := name.NewRegistry("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	err = Default().PingRegistry(context.Background(), reg)
	var ue *UnreachableError
	if !errors.As(err, &ue) || exitcode.Code(err) != exitcode.Unavailable {
		t.Fatalf("PingRegistry(127.0.0.1:1) = %v, want an UnreachableError", err)
	}
	msg := err.Error()
	if strings.Count(msg, "127.0.0.1:1") != 1 || !strings.Contains(msg, PhaseConnect) || strings.Contains(msg, "Get \"") {
		t.Errorf("PingRegistry(127.0.0.1:1) = %q, want the host and the phase (%s) once, no raw Get", msg, PhaseConnect)
	}
}

// TestNoPlainHTTPBeyondLoopback: ggcr says http for a registry at an RFC
// 1918 address or a *.local name and pings it over http after https
// failed; imagectl sends neither request (nor a credential) in clear text
// unless the registry is on loopback or marked insecure. The names resolve
// to a loopback test server through the test's own dialer, so nothing
// leaves the machine.
func TestNoPlainHTTPBeyondLoopback(t *testing.T) {
	var plain []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain = append(plain, r.Method+" "+r.Host+r.URL.Path)
		w.WriteHeader(http.StatusOK)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the https attempts' handshakes fail
	defer s.Close()
	to := s.Listener.Addr().String()
	for _, tc := range []struct {
		reg      string
		insecure []string
		plainOK  bool
	}{
		{"10.1.2.3:5000", nil, false},
		{"192.168.7.7:5000", nil, false},
		{"10.1.2.3:5000", []string{"10.1.2.3:5000"}, true},
	} {
		t.Run(tc.reg+fmt.Sprint(tc.insecure), func(t *testing.T) {
			plain = nil
			a, err := New(Config{Insecure: tc.insecure})
			if err != nil {
				t.Fatal(err)
			}
			a.base.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, to)
			}
			reg, err := name.NewRegistry(tc.reg)
			if err != nil {
				t.Fatal(err)
			}
			if reg.Scheme() != "http" {
				t.Fatalf("name.NewRegistry(%s).Scheme() = %s; the test needs ggcr to say http", tc.reg, reg.Scheme())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pingErr := a.PingRegistry(ctx, reg)
			_, headErr := remote.Head(reg.Repo("ml/app").Tag("1"), append(a.RemoteOptions(), remote.WithContext(ctx))...)
			if got := len(plain) > 0; got != tc.plainOK {
				t.Errorf("registry %s (insecure %v): plain-HTTP requests %q (ping: %v, head: %v), want plain HTTP %v", tc.reg, tc.insecure, plain, pingErr, headErr, tc.plainOK)
			}
		})
	}
}
