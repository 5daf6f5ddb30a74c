package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/buildkit/client"

	"imagectl/internal/build"
	"imagectl/internal/lock"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// demoRelease is the demo spec set up for one end-to-end release: a wheel
// index (so the test can publish next month's wheel), repositories and keys
// of the test's own, so other tests' pushes never meet them; the real
// buildkitd and containerd.
type demoRelease struct {
	env    testenv.Env
	index  testenv.WheelIndex
	imgs   []spec.Image
	keys   e2eKeys
	images string // the images directory: locks, release files, changelogs
	c      *client.Client
}

// newDemoRelease loads specs/demo.hcl against a wheel index holding a
// demo-core of coreBytes, with repositories under RUN-<nanoseconds>/. It
// skips the test without containerd (fails it under IMAGECTL_E2E=1): the
// verify stage runs the image there.
func newDemoRelease(t *testing.T, ctx context.Context, run string, coreBytes int64) *demoRelease {
	t.Helper()
	return newDemoReleaseOf(t, ctx, run, demoWheels(coreBytes, ""))
}

// demoWheels are the demo's wheels, demo-core of coreBytes; a nonce makes
// them wheels of their own (MODULE/nonce.txt holds it in each).
func demoWheels(coreBytes int64, nonce string) []wheelhouse.Spec {
	ws := []wheelhouse.Spec{
		{Name: "demo-core", Version: "1.0.0", PayloadBytes: coreBytes},
		{Name: "demo-util", Version: "1.0.0", Requires: []string{"demo-dep>=1"}},
		{Name: "demo-dep", Version: "1.0.0"},
	}
	if nonce != "" {
		for i := range ws {
			ws[i].Files = map[string]string{strings.ReplaceAll(ws[i].Name, "-", "_") + "/nonce.txt": nonce}
		}
	}
	return ws
}

// newDemoReleaseOf is newDemoRelease with the index's wheels given.
func newDemoReleaseOf(t *testing.T, ctx context.Context, run string, wheels []wheelhouse.Spec) *demoRelease {
	t.Helper()
	env := testenv.Get(t)
	if env.Containerd == "" {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatalf("CONTAINERD_ADDRESS is not set: make up starts containerd")
		}
		t.Skip("CONTAINERD_ADDRESS is not set; the verify stage runs the image with containerd")
	}
	d := &demoRelease{env: env}
	d.index = testenv.NewWheelIndex(t, wheels...)
	var err error
	d.imgs, err = spec.Load(ctx, []string{filepath.Join(env.Root, "specs", "demo.hcl")},
		spec.WithVars(map[string]string{"registry": env.Registry, "wheel_index": d.index.URL}))
	if err != nil || len(d.imgs) != 1 {
		t.Fatalf("spec.Load(demo) = %d images, %v", len(d.imgs), err)
	}
	prefix := fmt.Sprintf("%s-%d", run, time.Now().UnixNano())
	for i := range d.imgs {
		d.imgs[i].Repos = spec.Repos{
			Staging: env.Registry + "/" + prefix + "/staging/" + d.imgs[i].Name,
			Release: env.Registry + "/" + prefix + "/" + d.imgs[i].Name,
		}
	}
	dir := t.TempDir()
	d.keys = newE2EKeys(t, dir)
	d.images = filepath.Join(dir, "images")
	d.c = dialE2E(t, ctx, env.BuildkitHost)
	return d
}

// stages are the real stages of month's release: a missing lock is
// resolved, verify runs in containerd, and promotion accepts only a
// containerd run of the digest; skip names the platforms promotion may
// leave unverified.
func (d *demoRelease) stages(t *testing.T, month string, skip ...string) *Real {
	t.Helper()
	r, err := NewReal(Config{
		ImagesDir:               d.images,
		LockMissing:             true,
		LockOptions:             []resolve.Option{resolve.WithBuildkit(d.env.BuildkitHost)},
		Buildkit:                d.c,
		BuildOptions:            []build.Option{build.WithInit(filepath.Join(d.env.Bin, "imagectl-init"))},
		SignOptions:             []sign.Option{sign.WithKey(d.keys.signKey, e2ePassword)},
		PublicKey:               d.keys.signPub,
		VerifierSignOptions:     []sign.Option{sign.WithKey(d.keys.verKey, e2ePassword)},
		VerifierPublicKey:       d.keys.verPub,
		VerifyRuntime:           Container("containerd", "", nil),
		RequireContainerRuntime: true,
		SkipPlatforms:           skip,
		Month:                   month,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// nextMonth publishes demo-util 1.1.0, a newer periphery wheel, and writes
// the upgraded lock (the frozen demo-core stays) over the image's lock.
func (d *demoRelease) nextMonth(t *testing.T, ctx context.Context) {
	t.Helper()
	d.index.Publish(t, wheelhouse.Spec{Name: "demo-util", Version: "1.1.0", Requires: []string{"demo-dep>=1"}})
	path := lock.Path(d.images, d.imgs[0].Name)
	old, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	upgraded, err := resolve.Upgrade(ctx, d.imgs[0], old, resolve.WithBuildkit(d.env.BuildkitHost))
	if err != nil {
		t.Fatalf("resolve.Upgrade() = %v", err)
	}
	if err := lock.Write(path, upgraded); err != nil {
		t.Fatal(err)
	}
}
