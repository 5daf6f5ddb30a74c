package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"imagectl/internal/wheelhouse"
)

// Tool returns the absolute path of a binary in bin/ (buildkitd, buildctl,
// registry, crane, cosign, imagectl, imagectl-init). A missing one fails the
// test under IMAGECTL_E2E=1 and skips it otherwise.
func (e Env) Tool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(e.Bin, name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		missing(t, "bin/"+name+" (make tools / make build)")
	}
	return p
}

// Command returns an exec.Cmd for a bin/ tool with the test's context.
func (e Env) Command(t testing.TB, ctx context.Context, name string, args ...string) *exec.Cmd {
	t.Helper()
	return exec.CommandContext(ctx, e.Tool(t, name), args...)
}

// WheelIndex is a private wheel index served on 127.0.0.1 for one test.
type WheelIndex struct {
	// Dir holds files/ and simple/.
	Dir string
	// URL is the index URL for pip: http://127.0.0.1:PORT/simple/.
	URL string
}

// NewWheelIndex publishes specs, and Debian's pip wheel when installed, into
// a fresh index served on 127.0.0.1 until the test ends. It needs no daemon, so unit tests may use it too.
func NewWheelIndex(t testing.TB, specs ...wheelhouse.Spec) WheelIndex {
	t.Helper()
	dir := t.TempDir()
	for _, s := range specs {
		if _, err := wheelhouse.Publish(dir, s); err != nil {
			t.Fatalf("publishing %s %s: %v", s.Name, s.Version, err)
		}
	}
	// Debian's pip wheel (python3-pip-whl, hack/deps.sh): every lock takes
	// its resolver from the PyPI-side index.
	pips, _ := filepath.Glob("/usr/share/python-wheels/pip-*-py3-none-any.whl")
	for _, p := range pips {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "files", filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wheelhouse.WriteIndex(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := wheelhouse.Serve(ctx, dir, "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Wait()
	})
	return WheelIndex{Dir: dir, URL: srv.URL()}
}

// Publish adds a wheel to the index (a new version appears upstream).
func (w WheelIndex) Publish(t testing.TB, s wheelhouse.Spec) wheelhouse.File {
	t.Helper()
	f, err := wheelhouse.Publish(w.Dir, s)
	if err != nil {
		t.Fatalf("publishing %s %s: %v", s.Name, s.Version, err)
	}
	return f
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("IMAGECTL_E2E") == "1" {
		t.Fatalf("IMAGECTL_E2E=1 but %s is missing", what)
	}
	t.Skipf("end-to-end test: %s is missing", what)
}
