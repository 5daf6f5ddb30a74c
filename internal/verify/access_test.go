package verify

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
)

// pullerRuntime is a RegistryPuller whose probes never start (podman with
// no podman).
type pullerRuntime struct{ pulls string }

func (*pullerRuntime) Name() string    { return "podman" }
func (*pullerRuntime) Close() error    { return nil }
func (r *pullerRuntime) Pulls() string { return r.pulls }
func (*pullerRuntime) Exec(_ context.Context, p Probe) ([]byte, error) {
	return nil, &ProbeError{Probe: p.Name, Err: errors.New("container runtime: podman not found")}
}

// TestRunRegistryDenied: a runtime that pulls the digest from a registry
// that wants a login the Docker config lacks fails with exit 77 naming the
// registry, before any probe; a runtime that runs something else (oci:DIR)
// is not held up by the registry.
func TestRunRegistryDenied(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer s.Close()
	host := strings.TrimPrefix(s.URL, "http://")
	d, err := name.NewDigest(host + "/ml/app@sha256:" + strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", filepath.Dir(cfg))
	l := &lock.Lock{Name: "demo", Digest: "sha256:" + strings.Repeat("b", 64)}

	rt := &pullerRuntime{pulls: d.String()}
	_, err = Run(context.Background(), l, WithImage(d), WithRuntime(rt), WithGPUProber(nil), WithRegistryAccess(auth.Default()))
	var ae *auth.Error
	if !errors.As(err, &ae) || ae.Host != host || exitcode.Code(err) != exitcode.AuthFailed || !strings.Contains(err.Error(), cfg) {
		t.Fatalf("Run(podman of %s) = %v, want an *auth.Error for %s naming %s, exit 77", d, err, host, cfg)
	}

	other := &pullerRuntime{pulls: ""} // podman of oci:DIR
	_, err = Run(context.Background(), l, WithImage(d), WithRuntime(other), WithGPUProber(nil), WithRegistryAccess(auth.Default()))
	if errors.As(err, &ae) {
		t.Errorf("Run(podman of oci:DIR) = %v, want no registry check", err)
	}
}
