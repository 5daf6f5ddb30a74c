package resolve

import (
	"os"
	"strings"
	"testing"

	"imagectl/internal/lock"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
)

// TestE2ELockPlatforms locks the demo for linux/amd64 and linux/arm64 on the
// real buildkitd: apt and pip run inside the arm64 base (the base index's
// arm64 manifest) under QEMU emulation, and the lock records each
// platform's debs and wheels.
func TestE2ELockPlatforms(t *testing.T) {
	env := testenv.Get(t)
	base := env.MultiBase(t)
	ctx := e2eContext(t)
	img := loadDemo(t, env)
	img.Base = base
	img.Platforms = []string{"linux/amd64", "linux/arm64"}
	dir := t.TempDir()
	if err := LockAll(ctx, dir, []spec.Image{img}, WithBuildkit(env.BuildkitHost), WithRoot(env.Root)); err != nil {
		t.Fatalf("locking demo for amd64+arm64: %v", err)
	}
	l, err := lock.Read(lock.Path(dir, img.Name))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.PlatformNames(), " "); got != "linux/amd64 linux/arm64" {
		t.Fatalf("lock platforms = %s, want linux/amd64 linux/arm64", got)
	}
	arm, err := l.ForPlatform("linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if arm.Base.ManifestDigest == l.Base.ManifestDigest || arm.Base.IndexDigest != l.Base.IndexDigest {
		t.Errorf("bases amd64 %+v arm64 %+v: want one index, two manifests", l.Base, arm.Base)
	}
	for _, pl := range []struct {
		l    *lock.Lock
		arch string
	}{{l, "amd64"}, {arm, "arm64"}} {
		jq := false
		for _, d := range pl.l.Apt {
			if d.Arch != pl.arch && d.Arch != "all" {
				t.Errorf("%s lock has deb %s %s for %s", pl.arch, d.Name, d.Version, d.Arch)
			}
			jq = jq || d.Name == "jq"
		}
		if !jq {
			t.Errorf("%s lock has no jq", pl.arch)
		}
		if _, ok := wheel(pl.l, "demo-util"); !ok {
			t.Errorf("%s lock has no demo-util", pl.arch)
		}
		if pl.l.Python.Path == "" || !strings.HasPrefix(pl.l.Python.Version, "3.11.") {
			t.Errorf("%s python = %+v", pl.arch, pl.l.Python)
		}
	}
	b, _ := os.ReadFile(lock.Path(dir, img.Name))
	t.Logf("two-platform lock: amd64 %d debs, arm64 %d debs, %d bytes", len(l.Apt), len(arm.Apt), len(b))
}
