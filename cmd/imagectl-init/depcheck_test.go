package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the init small and portable: it may import the standard
// library, golang.org/x/sys and the few imagectl packages that themselves
// import nothing else (like ggcr's pkg/registry/depcheck_test.go).
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{
		"imagectl/cmd/imagectl-init":   true,
		"imagectl/internal/runtime":    true,
		"imagectl/internal/initconfig": true,
		"imagectl/internal/exitcode":   true,
		"imagectl/internal/logs":       true,
		"imagectl/internal/version":    true,
		"imagectl/internal/strictjson": true,
	}
	var seen int
	for _, p := range strings.Fields(string(out)) {
		seen++
		if allowed[p] || p == "golang.org/x/sys" || strings.HasPrefix(p, "golang.org/x/sys/") {
			continue
		}
		t.Errorf("imagectl-init imports %s: only the standard library, golang.org/x/sys and %v are allowed", p, keys(allowed))
	}
	if seen == 0 {
		t.Fatalf("go list -deps listed nothing")
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
