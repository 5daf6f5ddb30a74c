package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// matches returns the first group of re over the files that glob names,
// sorted and without repeats.
func matches(t *testing.T, re *regexp.Regexp, globs ...string) []string {
	t.Helper()
	var out []string
	for _, g := range globs {
		files, err := filepath.Glob(filepath.Join(root, g))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", g, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllSubmatch(b, -1) {
				out = append(out, string(m[1]))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestServiceEnv: the local services' variables have one spelling. What
// the hack/ scripts write into .cache/env, what internal/testenv reads and
// what docs/development.md documents must name the same variables: each
// one written is documented, each one read is written or documented (a
// knob the user sets), and the docs name none that nothing writes or reads.
func TestServiceEnv(t *testing.T) {
	written := matches(t, regexp.MustCompile(`printf 'export ([A-Za-z_][A-Za-z0-9_]*)=`), "hack/*.sh")
	read := matches(t, regexp.MustCompile(`(?:Getenv|LookupEnv)\("([A-Za-z_][A-Za-z0-9_]*)"\)`), "internal/testenv/*.go")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z][A-Za-z0-9_]*)` \\|").FindAllSubmatch(doc, -1) {
		rows[string(m[1])] = true
	}
	mentioned := func(name string) bool { return rows[name] || strings.Contains(string(doc), "`"+name+"`") }
	if len(written) < 15 || len(read) < 15 {
		t.Fatalf("found %d written and %d read variables: the patterns no longer match the scripts or testenv", len(written), len(read))
	}
	for _, n := range written {
		if !mentioned(n) {
			t.Errorf("hack/ writes %s into .cache/env, but docs/development.md does not document it", n)
		}
	}
	for _, n := range read {
		if !slices.Contains(written, n) && !mentioned(n) {
			t.Errorf("internal/testenv reads %s, which no hack/ script writes and docs/development.md does not name", n)
		}
	}
	for n := range rows {
		if !slices.Contains(written, n) && !slices.Contains(read, n) {
			t.Errorf("docs/development.md documents %s, which no hack/ script writes and internal/testenv does not read", n)
		}
	}
}
