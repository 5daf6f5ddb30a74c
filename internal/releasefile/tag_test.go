package releasefile

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

func mustDigest(t *testing.T, s string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNextTag(t *testing.T) {
	a := "127.0.0.1:5000/s/demo@sha256:" + strings.Repeat("a", 64)
	b := "127.0.0.1:5000/s/demo@sha256:" + strings.Repeat("b", 64)
	c := "127.0.0.1:5000/s/demo@sha256:" + strings.Repeat("c", 64)
	f := &File{Releases: []Release{
		{Source: a, Tags: []string{"demo-2026.10", "demo-2026.11"}, Month: "2026-10"},
		{Source: b, Tags: []string{"demo-2026.11.1"}, Month: "2026-11"},
	}}
	for _, tc := range []struct {
		name, month, src, want string
	}{
		{"a new month", "2026-12", c, "demo-2026.12"},
		{"a digest keeps its tag", "2026-11", a, "demo-2026.11"},
		{"the second re-release keeps its suffix", "2026-11", b, "demo-2026.11.1"},
		{"a third digest in the month gets the next suffix", "2026-11", c, "demo-2026.11.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := name.NewDigest(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := NextTag(f, "demo", tc.month, d); got != tc.want {
				t.Errorf("NextTag(%s, %s) = %q, want %q", tc.month, tc.src, got, tc.want)
			}
		})
	}
	prev := f.Previous(mustDigest(t, b))
	if prev == nil || prev.Source != a {
		t.Errorf("Previous(b) = %v, want the release of a", prev)
	}
	if prev := f.Previous(mustDigest(t, c)); prev == nil || prev.Source != b {
		t.Errorf("Previous(c) = %v, want the newest release, b's", prev)
	}
	if prev := (&File{}).Previous(mustDigest(t, c)); prev != nil {
		t.Errorf("Previous(empty file) = %v, want nil", prev)
	}
}
