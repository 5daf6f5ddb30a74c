package build

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/moby/buildkit/solver/pb"

	"imagectl/internal/lock"
)

// unitLock2 is unitLock with a linux/arm64 resolution beside the amd64 one.
func unitLock2() *lock.Lock {
	l := unitLock()
	arm := lock.Resolution{Platform: "linux/arm64", Base: l.Base, Python: l.Python, Resolver: l.Resolver}
	arm.Base.ManifestDigest = "sha256:" + sum("arm64 manifest")
	arm.Base.Platform = "linux/arm64"
	for _, d := range l.Apt {
		d.Arch, d.URL, d.SHA256 = "arm64", strings.Replace(d.URL, ".deb", "_arm64.deb", 1), sum(d.Name+" arm64")
		arm.Apt = append(arm.Apt, d)
	}
	arm.Pip = append(arm.Pip, l.Pip...)
	l.Platforms = []lock.Resolution{arm}
	return l
}

// State builds one platform: a lock with several is refused, not built as
// its first one.
func TestStateRefusesMultiPlatformLock(t *testing.T) {
	_, err := State(context.Background(), unitLock2(), fakeInit(t))
	if err == nil || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
		t.Fatalf("State(two-platform lock) = %v, want an error naming both platforms", err)
	}
}

// The arm64 view of a lock builds an arm64 image: its base and every step
// are linux/arm64, and its debs are the arm64 ones.
func TestDefinitionPlatform(t *testing.T) {
	view, err := unitLock2().ForPlatform("linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	armInit := t.TempDir() + "/init-arm64"
	if err := os.WriteFile(armInit, []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	def, err := Definition(context.Background(), view, fakeInit(t), WithPlatformInit("linux/arm64", armInit))
	if err != nil {
		t.Fatalf("Definition(arm64 view) = %v", err)
	}
	images, runs := 0, 0
	for _, dt := range def.Def {
		var op pb.Op
		if err := op.UnmarshalVT(dt); err != nil {
			t.Fatal(err)
		}
		if src := op.GetSource(); src != nil && strings.HasPrefix(src.Identifier, "docker-image://") {
			images++
			if !strings.Contains(src.Identifier, "@sha256:"+sum("arm64 manifest")) {
				t.Errorf("base source %s, want the arm64 manifest", src.Identifier)
			}
		}
		if src := op.GetSource(); src != nil && strings.HasPrefix(src.Identifier, "http://deb.") && !strings.HasSuffix(src.Identifier, "_arm64.deb") {
			t.Errorf("arm64 build fetches %s", src.Identifier)
		}
		if op.GetExec() != nil {
			runs++
			if op.Platform == nil || op.Platform.Architecture != "arm64" {
				t.Errorf("exec op platform = %v, want arm64", op.Platform)
			}
		}
	}
	if images != 1 || runs == 0 {
		t.Errorf("definition has %d base sources and %d exec ops", images, runs)
	}
}

// The init binary must be an executable of the platform's architecture;
// for arm64 the default is imagectl-init-linux-arm64 beside the amd64 one.
func TestInitArch(t *testing.T) {
	exe, err := os.Executable() // this test binary: an ELF of the host (amd64)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInitArch(exe, platform); err != nil {
		t.Errorf("checkInitArch(amd64 ELF, linux/amd64) = %v", err)
	}
	arm := platform
	arm.Architecture = "arm64"
	if err := checkInitArch(exe, arm); err == nil || !strings.Contains(err.Error(), "EM_X86_64") || !strings.Contains(err.Error(), "GOARCH=arm64") {
		t.Errorf("checkInitArch(amd64 ELF, linux/arm64) = %v, want an error naming both machines and GOARCH=arm64", err)
	}
	o, err := makeOptions(WithInit("/opt/bin/imagectl-init"))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.initPathFor(arm); got != "/opt/bin/imagectl-init-linux-arm64" {
		t.Errorf("initPathFor(linux/arm64) = %s", got)
	}
	o, _ = makeOptions(WithInit("/opt/bin/imagectl-init"), WithPlatformInit("linux/arm64", "/x/init-arm64"))
	if got := o.initPathFor(arm); got != "/x/init-arm64" {
		t.Errorf("initPathFor(linux/arm64) with WithPlatformInit = %s", got)
	}
}

// A lock's platform, variant included, names its build the way the lock
// names it: platformOf then platformString gives Base.Platform back.
func TestPlatformStringOfLock(t *testing.T) {
	for _, n := range []string{"linux/amd64", "linux/arm64", "linux/arm/v7"} {
		l := unitLock()
		l.Base.Platform = n
		p, err := platformOf(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := platformString(p); got != n {
			t.Errorf("platformString(platformOf(lock of %s)) = %q", n, got)
		}
	}
}
