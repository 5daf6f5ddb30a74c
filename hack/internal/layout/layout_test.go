package layout

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "../../.."

// layoutPaths returns the paths named in the first column of the table
// under docs/development.md's "## Layout" heading, without a trailing slash.
func layoutPaths(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code := regexp.MustCompile("`([^`]+)`")
	var paths []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## Layout")
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range code.FindAllStringSubmatch(first, -1) {
			paths = append(paths, strings.TrimSuffix(m[1], "/"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return paths
}

// internalPackages returns every folder under internal/ with a Go file
// that is not a test.
func internalPackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !slices.Contains(pkgs, rel) {
			pkgs = append(pkgs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestDevelopmentLayout: the layout table of docs/development.md names
// every internal/ package (a folder with a non-test Go file), and every path
// it names exists.
func TestDevelopmentLayout(t *testing.T) {
	paths := layoutPaths(t)
	pkgs := internalPackages(t)
	// A table or a walk that finds nothing checks nothing.
	if len(paths) < 20 || len(pkgs) < 20 {
		t.Fatalf("docs/development.md's layout table names %d paths and internal/ has %d packages, want at least 20 of each (did the table's heading or format change?)", len(paths), len(pkgs))
	}
	for _, p := range pkgs {
		if !slices.Contains(paths, p) {
			t.Errorf("docs/development.md's layout table has no row for %s: add one saying what it holds", p)
		}
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			t.Errorf("docs/development.md's layout table names %s, which does not exist", p)
		}
	}
}
