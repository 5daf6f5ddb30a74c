package toolsmod

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// requires returns the module versions a go.mod requires.
func requires(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	out := map[string]string{}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	return out
}

// TestToolsShareMainVersions fails when a module required by both the main
// module and tools/ is at two versions: the tools then compile their own
// copy of it and of everything above it, and bin/imagectl shares nothing.
// Fix by moving tools/ to the main module's version:
// cd tools && go get MODULE@VERSION.
func TestToolsShareMainVersions(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	main := requires(t, filepath.Join(root, "go.mod"))
	tools := requires(t, filepath.Join(root, "tools", "go.mod"))
	shared := 0
	for path, want := range main {
		got, ok := tools[path]
		if !ok {
			continue
		}
		shared++
		if got != want {
			t.Errorf("tools/go.mod requires %s %s, the main module %s: cd tools && go get %s@%s", path, got, want, path, want)
		}
	}
	// BuildKit, ggcr, cosign, gRPC and x/sys at least: a broken parse
	// would otherwise pass with nothing compared.
	if shared < 100 {
		t.Errorf("only %d modules required by both go.mod files; want the shared dependency graph (>= 100)", shared)
	}
}
