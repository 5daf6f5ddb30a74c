package inplace

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"imagectl/internal/verify"
)

// TestExec runs a probe with an "interpreter" that prints the script: the
// probe scripts are written out once, handed to it by path, and removed on
// Close; a failing process is a *verify.ProbeError.
func TestExec(t *testing.T) {
	rt, err := New(WithPython("cat"))
	if err != nil {
		t.Fatal(err)
	}
	var _ verify.Execer = rt
	out, err := rt.Exec(context.Background(), verify.Probe{Name: "env", Script: "env.py"})
	if err != nil || !strings.Contains(string(out), `"probe"`) {
		t.Fatalf("Exec(env.py) = %.80q, %v; want the script", out, err)
	}
	dir, _ := rt.probes.Path()
	_, err = rt.Exec(context.Background(), verify.Probe{Name: "missing", Script: "missing.py"})
	var pe *verify.ProbeError
	if !errors.As(err, &pe) || pe.Probe != "missing" {
		t.Errorf("Exec(missing.py) = %v, want a *verify.ProbeError", err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("probe folder %s left after Close: %v", dir, err)
	}
}
