package testenv

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"imagectl/internal/wheelhouse"
)

func TestNewWheelIndex(t *testing.T) {
	idx := NewWheelIndex(t, wheelhouse.Spec{Name: "demo-dep", Version: "1.0.0"})
	f := idx.Publish(t, wheelhouse.Spec{Name: "demo-dep", Version: "1.1.0"})
	resp, err := http.Get(idx.URL + "demo-dep/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"demo_dep-1.0.0-py3-none-any.whl#sha256=", f.Filename + "#sha256=" + f.SHA256} {
		if !strings.Contains(string(b), want) {
			t.Errorf("GET %sdemo-dep/ lacks %q:\n%s", idx.URL, want, b)
		}
	}
}

// TestServicesAnswer checks what `make up` promised, when it ran.
func TestServicesAnswer(t *testing.T) {
	e := Get(t)
	for _, u := range []string{"http://" + e.Registry + "/v2/", e.WheelIndex + "demo-core/"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d, want 200", u, resp.StatusCode)
		}
	}
	if !strings.HasPrefix(e.BuildkitHost, "unix://") {
		t.Errorf("BUILDKIT_HOST = %q, want unix://...", e.BuildkitHost)
	}
	out, err := e.Command(t, t.Context(), "crane", "digest", e.Base).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "sha256:") {
		t.Errorf("crane digest %s = %q, %v; want a digest", e.Base, out, err)
	}
	out, err = e.Command(t, t.Context(), "buildctl", "--addr", e.BuildkitHost, "debug", "workers").CombinedOutput()
	if err != nil {
		t.Errorf("buildctl debug workers: %v\n%s", err, out)
	}
}
