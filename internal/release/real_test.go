package release

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/build"
	"imagectl/internal/lock"
	"imagectl/internal/verify"
)

// fakeBuildkit satisfies build.Client for NewReal; these tests never build.
type fakeBuildkit struct{ build.Client }

func realForTest(t *testing.T, cfg Config) (*Real, error) {
	t.Helper()
	if cfg.ImagesDir == "" {
		cfg.ImagesDir = t.TempDir()
	}
	cfg.Buildkit = fakeBuildkit{}
	cfg.PublicKey, cfg.VerifierPublicKey = "cosign.pub", "verifier.pub"
	cfg.VerifyRuntime = func(*lock.Lock, name.Digest) (verify.Runtime, error) { return nil, nil }
	return NewReal(cfg)
}

func TestNewRealSkipPlatforms(t *testing.T) {
	for _, tc := range []struct {
		name    string
		skip    []string
		wantErr string
	}{
		{name: "none"},
		{name: "arm64", skip: []string{"linux/arm64"}},
		{name: "both", skip: []string{"linux/amd64", "linux/arm64"}},
		{name: "unknown", skip: []string{"linux/arm64", "linux/s390x"}, wantErr: `"linux/s390x"`},
		{name: "not a platform", skip: []string{"arm64"}, wantErr: `"arm64"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := realForTest(t, Config{SkipPlatforms: tc.skip})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("NewReal(SkipPlatforms %v) = %v, want no error", tc.skip, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("NewReal(SkipPlatforms %v) = %v, want an error naming %s", tc.skip, err, tc.wantErr)
			}
		})
	}
}

// twoPlatformLock is a lock of linux/amd64 and linux/arm64 with one deb and
// wheels per platform.
func twoPlatformLock() *lock.Lock {
	l := &lock.Lock{Name: "demo", Digest: "sha256:" + strings.Repeat("1", 64)}
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

func TestChangelogFirstReleaseHasASectionPerPlatform(t *testing.T) {
	r, err := realForTest(t, Config{Month: "2026-12"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.cfg.ImagesDir, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := r.writeChangelog(context.Background(), twoPlatformLock(), "demo-2026.12", nil)
	if err != nil {
		t.Fatalf("writeChangelog() = %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# demo-2026.12 (2026-12)\n\nFirst release.\n\n## linux/amd64\n\n1 debs, 2 wheels.\n\n## linux/arm64\n\n2 debs, 1 wheels.\n"
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("changelog (-want +got):\n%s", diff)
	}
}
