package build

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock/resolve"
)

// TestE2EPlatformsIndex locks the demo for linux/amd64 and linux/arm64 on
// the two-platform base, builds it twice from empty caches into one OCI
// image index (arm64 steps under QEMU), pushes it, and runs the arm64
// image through its init with podman --platform linux/arm64.
func TestE2EPlatformsIndex(t *testing.T) {
	e := getE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	img := e.twoPlatformDemo(t, ctx, "platforms")
	start := time.Now()
	l, err := resolve.Image(ctx, img, resolve.WithBuildkit(e.env.BuildkitHost), resolve.WithRoot(e.env.Root))
	if err != nil {
		t.Fatalf("locking demo for two platforms: %v", err)
	}
	t.Logf("lock, both platforms: %.1fs", time.Since(start).Seconds())

	dir, err := os.MkdirTemp("", "imagectl-build-e2e-platforms-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var results []*Result
	for i := range 2 {
		prune(t, e.c)
		start := time.Now()
		opts := []Option{WithInit(e.init), WithPush(true)}
		if i == 0 {
			opts = append(opts, WithOCILayout(dir))
		}
		r, err := Solve(ctx, e.c, l, opts...)
		if err != nil {
			t.Fatalf("clean build %d of two platforms: %v", i+1, err)
		}
		t.Logf("clean build %d: index %s in %.1fs", i+1, r.Digest, time.Since(start).Seconds())
		results = append(results, r)
	}
	r := results[0]
	if results[1].Digest != r.Digest {
		t.Errorf("two clean builds: index %s != %s", r.Digest, results[1].Digest)
	}
	if len(r.Platforms) != 2 || r.Platforms[0].Platform != "linux/amd64" || r.Platforms[1].Platform != "linux/arm64" {
		t.Fatalf("Result.Platforms = %+v, want linux/amd64 and linux/arm64", r.Platforms)
	}
	for i, p := range r.Platforms {
		if p.Digest != results[1].Platforms[i].Digest {
			t.Errorf("%s: two clean builds gave %s and %s", p.Platform, p.Digest, results[1].Platforms[i].Digest)
		}
		t.Logf("%s: %s, %d bytes, %d layers", p.Platform, p.Digest, p.Size, len(p.Layers))
	}

	// The registry holds an index whose children carry their platform.
	ref, _ := name.NewDigest(r.Ref)
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("reading the pushed index %s: %v", r.Ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 2 {
		t.Fatalf("pushed index = %+v, %v; want two manifests", im, err)
	}
	for _, p := range r.Platforms {
		h, _ := name.NewDigest(l.Repos.Staging + "@" + p.Digest)
		child, err := remote.Image(h)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := child.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if "linux/"+cf.Architecture != p.Platform || cf.Config.Labels[LabelLockDigest] != l.Digest {
			t.Errorf("%s image config: arch %s, lock label %s; want its arch and lock %s", p.Platform, cf.Architecture, cf.Config.Labels[LabelLockDigest], l.Digest)
		}
	}

	// The arm64 image starts under emulation through its own (arm64) init.
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("podman is needed (make deps): %v", err)
	}
	out, err := exec.CommandContext(ctx, podman, "run", "--rm", "--network", "none", "--platform", "linux/arm64",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "-e", "IMAGECTL_STORAGE_TIMEOUT=1s",
		"oci:"+dir, "/bin/sh", "-c", `echo "arch=$(uname -m)"
echo "pid1=$(tr '\0\n' '  ' < /proc/1/cmdline)"
echo "elf=$(od -An -tx1 -j18 -N1 `+initconfig.InitPath+` | tr -d ' ')"
echo "py=$(/opt/venv/bin/python -c 'import demo_util, platform; print(platform.machine())')"`).CombinedOutput()
	if err != nil {
		t.Fatalf("podman run --platform linux/arm64: %v\n%s", err, out)
	}
	// Under QEMU (binfmt flag F) PID 1's exe is the emulator; its command
	// line names the init, and the init in the image is an EM_AARCH64 (0xb7)
	// executable.
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	if got["arch"] != "aarch64" || !strings.Contains(got["pid1"], initconfig.InitPath+" /bin/sh") || got["elf"] != "b7" || got["py"] != "aarch64" {
		t.Errorf("arm64 container printed %q, want arch=aarch64, PID 1 running %s, its ELF machine b7 (aarch64) and py=aarch64", out, initconfig.InitPath)
	}
	if !strings.Contains(string(out), "imagectl-init: ") {
		t.Errorf("the arm64 init wrote nothing at start:\n%s", out)
	}
}
