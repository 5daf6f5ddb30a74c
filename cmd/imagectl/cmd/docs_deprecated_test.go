package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsUseCurrentSpellings: no command line in README.md, docs/ or the
// hack scripts uses a flag kept only for an earlier release's spelling
// (hidden: lock --check, scan --releases, mirror --artifact, ...).
func TestDocsUseCurrentSpellings(t *testing.T) {
	root := "../../.."
	var files []string
	for _, g := range []string{"README.md", "docs/*.md", "hack/*.sh", "hack/*/*.sh"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		files = append(files, m...)
	}
	if len(files) < 3 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, use := range strings.Split(line, "imagectl ")[1:] {
				if bad := hiddenFlag(use); bad != "" {
					rel, _ := filepath.Rel(root, f)
					t.Errorf("%s:%d: imagectl %s: %s is the spelling of an earlier release", rel, i+1, strings.TrimSpace(use), bad)
				}
			}
		}
	}
}

// hiddenFlag returns the first hidden flag of the command line args (the
// words after "imagectl ", up to a shell operator or the end of the code).
func hiddenFlag(args string) string {
	var words []string
	for _, w := range strings.Fields(args) {
		if strings.ContainsAny(w, "`|;#)") || w == "&&" || w == "||" {
			break
		}
		words = append(words, w)
	}
	cmd, _, err := New().Find(words)
	if err != nil {
		return ""
	}
	for _, w := range words {
		if !strings.HasPrefix(w, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		fl := cmd.Flags().Lookup(name)
		if fl == nil {
			fl = cmd.InheritedFlags().Lookup(name)
		}
		if fl != nil && fl.Hidden {
			return w
		}
	}
	return ""
}

// TestModeSubcommandsHaveExamples: the subcommands that replaced mode
// flags show examples in their --help.
func TestModeSubcommandsHaveExamples(t *testing.T) {
	for _, path := range [][]string{{"lock", "check"}, {"lock", "upgrade"}, {"scan", "releases"}, {"mirror", "artifact"}} {
		c, _, err := New().Find(path)
		if err != nil || c.Name() != path[1] {
			t.Errorf("imagectl %s: %v, found %q", strings.Join(path, " "), err, c.Name())
			continue
		}
		if !strings.Contains(c.Example, "imagectl "+strings.Join(path, " ")) {
			t.Errorf("imagectl %s --help: no example of it:\n%s", strings.Join(path, " "), c.Example)
		}
	}
}
