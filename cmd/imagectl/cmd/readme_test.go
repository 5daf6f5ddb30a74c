package cmd

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"imagectl/internal/spec"
)

// TestReadmeSkipPlatform: a README line that releases a shipped spec with
// --skip-platform P is true only if that spec has an image for P.
func TestReadmeSkipPlatform(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`imagectl release (specs/\S+\.hcl)\b.*--skip-platform (\S+)`)
	for _, m := range line.FindAllStringSubmatch(string(b), -1) {
		imgs, err := spec.Load(context.Background(), []string{"../../../" + m[1]}, spec.WithEnv(func(string) (string, bool) { return "", false }))
		if err != nil {
			t.Fatalf("README names %s: %v", m[1], err)
		}
		if !slices.ContainsFunc(imgs, func(img spec.Image) bool { return slices.Contains(img.Platforms, m[2]) }) {
			var ps []string
			for _, img := range imgs {
				ps = append(ps, img.Name+": "+strings.Join(img.Platforms, ","))
			}
			t.Errorf("README: %q skips %s, but %s has no image for it (%s)", m[0], m[2], m[1], strings.Join(ps, "; "))
		}
	}
}
