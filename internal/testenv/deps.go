package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// The modules whose weight a light package must not carry: BuildKit's
// client and solver, client-go, containerd, NVML, grype.
const (
	BuildKit   = "github.com/moby/buildkit"
	ClientGo   = "k8s.io/client-go"
	Containerd = "github.com/containerd"
	NVML       = "github.com/NVIDIA/go-nvml"
	Grype      = "github.com/anchore/grype"
)

// CheckDeps fails t for every package that the package in the test's
// folder links (go list -deps, tests excluded) whose import path starts
// with one of forbidden: the import-graph test that keeps a package light
// (like ggcr's pkg/registry/depcheck_test.go).
func CheckDeps(t *testing.T, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	self := deps[len(deps)-1]
	bad := map[string][]string{}
	for _, p := range deps {
		for _, f := range forbidden {
			if p == f || strings.HasPrefix(p, strings.TrimSuffix(f, "/")+"/") {
				bad[f] = append(bad[f], p)
			}
		}
	}
	for _, f := range forbidden {
		if ps := bad[f]; len(ps) > 0 {
			t.Errorf("%s links %d packages of %s (%s, ...): keep it out (go list -deps %s)", self, len(ps), f, ps[0], self)
		}
	}
}
