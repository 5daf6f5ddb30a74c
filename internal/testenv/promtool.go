package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Promtool returns the absolute path of bin/promtool (hack/tools.sh builds
// it from tools/promtool). It needs no service, so unit tests may use it;
// a missing one fails the test under IMAGECTL_E2E=1 and skips it otherwise.
func Promtool(t testing.TB) string {
	t.Helper()
	p := filepath.Join(Root(), "bin", "promtool")
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		missing(t, "bin/promtool (hack/tools.sh builds it from tools/promtool)")
	}
	return p
}

// CheckMetrics runs promtool check metrics over the exposition-format
// file at path and fails the test when Prometheus cannot parse it or its
// linter objects (exit 3: a counter without _total, a unit that is not a
// base unit, a metric without help).
func CheckMetrics(t testing.TB, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.CommandContext(context.Background(), Promtool(t), "check", "metrics")
	cmd.Stdin = f
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics < %s: %v\n%s", path, err, out)
	}
}
