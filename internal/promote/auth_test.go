package promote

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

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
)

// TestPinDeniedIsNotARefusal: a registry that wants a login the Docker
// config does not have fails pin with exit 77 naming the registry and the
// config tried, not with a gate refusal (5) or as unreachable (69).
func TestPinDeniedIsNotARefusal(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "pw" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer s.Close()
	host := strings.TrimPrefix(s.URL, "http://")
	tag, err := name.NewTag(host + "/ml/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithAuth(&authn.Basic{Username: "ci", Password: "pw"})); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", filepath.Dir(cfg))
	_, err = Pin(context.Background(), tag, WithTrustedKeys("k.pub"), WithVerifierKeys("v.pub"), WithAccess(auth.Default()))
	var ae *auth.Error
	var re *RefusedError
	if !errors.As(err, &ae) || errors.As(err, &re) || ae.Host != host {
		t.Fatalf("Pin() without a login = %v, want an *auth.Error for %s and no refusal", err, host)
	}
	if exitcode.Code(err) != exitcode.AuthFailed || !strings.Contains(err.Error(), cfg) {
		t.Errorf("Pin() = %v (exit %d), want exit %d naming %s", err, exitcode.Code(err), exitcode.AuthFailed, cfg)
	}
}

// TestPinUnreachableOnce: pin of a registry where nothing listens exits 69
// naming the phase and the host once, not ggcr's https and http dial
// errors side by side.
func TestPinUnreachableOnce(t *testing.T) {
	tag, err := name.NewTag("127.0.0.1:1/imagectl/demo:demo")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Pin(context.Background(), tag, WithTrustedKeys("k.pub"), WithVerifierKeys("v.pub"), WithAccess(auth.Default()))
	if exitcode.Code(err) != exitcode.Unavailable {
		t.Fatalf("Pin(127.0.0.1:1) = %v (exit %d), want exit %d", err, exitcode.Code(err), exitcode.Unavailable)
	}
	msg := err.Error()
	if strings.Contains(msg, `Get "http`) || !strings.Contains(msg, auth.PhaseConnect) || strings.Count(msg, "registry 127.0.0.1:1") != 1 {
		t.Errorf("Pin(127.0.0.1:1) = %q, want the phase and the registry once and no raw Get", msg)
	}
}
