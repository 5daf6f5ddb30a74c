package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"imagectl/internal/spec"
)

// TestReadmeSkipPlatform: a line of README.md or docs/*.md that releases a
// spec with --skip-platform P is true. A shipped spec it names
// (specs/NAME.hcl) has an image for P; a placeholder (SPEC) comes with the
// platforms such a spec declares, P among them, and where the line says the
// shipped specs are ARCH only, every shipped image is linux/ARCH alone (the
// reason it names no shipped spec).
func TestReadmeSkipPlatform(t *testing.T) {
	root := "../../.."
	noEnv := spec.WithEnv(func(string) (string, bool) { return "", false })
	shipped, err := spec.Load(t.Context(), []string{filepath.Join(root, "specs")}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	line := regexp.MustCompile(`imagectl release (\S+) .*--skip-platform (\S+)(.*)`)
	declared := regexp.MustCompile(`platforms = \[([^\]]*)\]`)
	only := regexp.MustCompile(`the shipped specs are (\w+) only`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range line.FindAllStringSubmatch(string(b), -1) {
			n++
			path, p, rest := m[1], m[2], m[3]
			if strings.HasPrefix(path, "specs/") {
				imgs, err := spec.Load(t.Context(), []string{filepath.Join(root, path)}, noEnv)
				if err != nil {
					t.Fatalf("%s names %s: %v", rel, path, err)
				}
				if !slices.ContainsFunc(imgs, func(img spec.Image) bool { return slices.Contains(img.Platforms, p) }) {
					t.Errorf("%s: %q skips %s, but %s has no image for it (%s)", rel, m[0], p, path, platforms(imgs))
				}
				continue
			}
			d := declared.FindStringSubmatch(rest)
			if d == nil || !strings.Contains(d[1], `"`+p+`"`) {
				t.Errorf("%s: %q releases placeholder %s skipping %s without saying the spec's platforms = [...] include %s", rel, m[0], path, p, p)
			}
			if o := only.FindStringSubmatch(rest); o != nil {
				want := "linux/" + o[1]
				for _, img := range shipped {
					if !slices.Equal(img.Platforms, []string{want}) {
						t.Errorf("%s: %q says the shipped specs are %s only, but %s", rel, m[0], o[1], platforms([]spec.Image{img}))
					}
				}
			}
		}
	}
	// The README's release line with --skip-platform: a loop that matches
	// nothing tests nothing.
	if n < 1 {
		t.Errorf("no \"imagectl release SPEC ... --skip-platform P\" line in README.md or docs/*.md, want at least 1")
	}
}

// platforms lists each image's platforms, for a message.
func platforms(imgs []spec.Image) string {
	var ps []string
	for _, img := range imgs {
		ps = append(ps, img.Name+": "+strings.Join(img.Platforms, ","))
	}
	return strings.Join(ps, "; ")
}
