package promote

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/lock"
	"imagectl/internal/releasefile"
)

func changelogLock() *lock.Lock {
	l := &lock.Lock{Name: "demo"}
	l.Base = lock.Base{Ref: "base:bookworm", Platform: "linux/amd64", ManifestDigest: "sha256:" + strings.Repeat("a", 64)}
	l.Apt = []lock.Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64"}}
	l.Pip = []lock.Wheel{{Name: "demo-core", Version: "1.0.0"}, {Name: "demo-util", Version: "1.0.0"}}
	l.Platforms = []lock.Resolution{{
		Platform: "linux/arm64",
		Base:     lock.Base{Ref: "base:bookworm", Platform: "linux/arm64", ManifestDigest: "sha256:" + strings.Repeat("b", 64)},
		Apt:      []lock.Deb{{Name: "jq", Version: "1.6-2.1", Arch: "arm64"}, {Name: "libjq1", Version: "1.6-2.1", Arch: "arm64"}},
		Pip:      []lock.Wheel{{Name: "demo-core", Version: "1.0.0"}},
	}}
	return l
}

func TestChangelog(t *testing.T) {
	l := changelogLock()
	b, err := Changelog("demo-2026.12", "2026-12", l, nil, nil)
	if err != nil {
		t.Fatalf("Changelog(first) = %v", err)
	}
	want := "# demo-2026.12 (2026-12)\n\nFirst release.\n\n## linux/amd64\n\n1 debs, 2 wheels.\n\n## linux/arm64\n\n2 debs, 1 wheels.\n"
	if d := cmp.Diff(want, string(b)); d != "" {
		t.Errorf("Changelog(first) (-want +got):\n%s", d)
	}

	// Against a single-platform previous release: amd64 is diffed, arm64
	// is new; and a platform the previous release had is reported dropped.
	old := &lock.Lock{Name: "demo", Base: lock.Base{Ref: "base:bookworm", Platform: "linux/amd64", ManifestDigest: "sha256:" + strings.Repeat("a", 64)},
		Apt: []lock.Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64"}}, Pip: []lock.Wheel{{Name: "demo-core", Version: "0.9.0"}, {Name: "demo-util", Version: "1.0.0"}}}
	prev := &releasefile.Release{Source: "r/demo@sha256:" + strings.Repeat("0", 64), Tags: []string{"demo-2026.11"}, Month: "2026-11"}
	b, err = Changelog("demo-2026.12", "2026-12", l, prev, old)
	if err != nil {
		t.Fatalf("Changelog(second) = %v", err)
	}
	for _, want := range []string{"Changes since demo-2026.11 (2026-11, " + prev.Source + "):", "## linux/amd64", "demo-core", "0.9.0", "1.0.0", "## linux/arm64\n\nNew platform: 2 debs, 1 wheels."} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Changelog(second) lacks %q:\n%s", want, b)
		}
	}
	one := &lock.Lock{Name: "demo", Base: old.Base, Apt: old.Apt, Pip: old.Pip}
	b, err = Changelog("demo-2026.12", "2026-12", one, prev, l)
	if err != nil || !strings.Contains(string(b), "## linux/arm64\n\nPlatform dropped: this release has no linux/arm64 image.") {
		t.Errorf("Changelog(dropped arm64) = %v:\n%s", err, b)
	}
	if _, err := Changelog("demo-2026.12", "2026-12", l, prev, nil); err == nil || !strings.Contains(err.Error(), prev.Source) {
		t.Errorf("Changelog(previous release without its lock) = %v, want an error naming it", err)
	}
}
