package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/build"
	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
)

// TestReleaseDemoEndToEnd runs the whole pipeline on the demo spec against
// the real buildkitd, registry and podman: lock, build, sign, verify (in a
// container, through the image's init), promote; then pins the release tag,
// re-runs (everything resumes, nothing changes) and releases the next month
// (no layer changed, the changelog says so).
func TestReleaseDemoEndToEnd(t *testing.T) {
	env := testenv.Get(t)
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatalf("podman is not installed: make deps installs it")
		}
		t.Skip("podman is not installed; the verify stage runs the image with it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	imgs, err := spec.Load(ctx, []string{filepath.Join(env.Root, "specs", "demo.hcl")},
		spec.WithVars(map[string]string{"registry": env.Registry, "wheel_index": env.WheelIndex}))
	if err != nil {
		t.Fatalf("spec.Load(demo) = %v", err)
	}
	// Repositories of this test's own, so other tests' pushes never meet it.
	run := fmt.Sprintf("e2e-release-%d", time.Now().UnixNano())
	for i := range imgs {
		imgs[i].Repos = spec.Repos{
			Staging: env.Registry + "/" + run + "/staging/" + imgs[i].Name,
			Release: env.Registry + "/" + run + "/" + imgs[i].Name,
		}
	}

	dir := t.TempDir()
	pw := []byte("e2e")
	signKey, signPub, err := sign.GenerateKeyPair(filepath.Join(dir, "signer"), pw)
	if err != nil {
		t.Fatal(err)
	}
	verKey, verPub, err := sign.GenerateKeyPair(filepath.Join(dir, "verifier"), pw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := build.Dial(ctx, env.BuildkitHost, 10*time.Second)
	if err != nil {
		t.Fatalf("build.Dial(%s) = %v", env.BuildkitHost, err)
	}
	defer c.Close()
	images := filepath.Join(dir, "images")
	stages := func(month string) *Real {
		r, err := NewReal(Config{
			ImagesDir:           images,
			LockMissing:         true,
			LockOptions:         []lock.Option{lock.WithBuildkit(env.BuildkitHost)},
			Buildkit:            c,
			BuildOptions:        []build.Option{build.WithInit(filepath.Join(env.Bin, "imagectl-init"))},
			SignOptions:         []sign.Option{sign.WithKey(signKey, pw)},
			PublicKey:           signPub,
			VerifierSignOptions: []sign.Option{sign.WithKey(verKey, pw)},
			VerifierPublicKey:   verPub,
			VerifyRuntime:       Container("podman", "", nil),
			Month:               month,
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// First release.
	out, err := Run(ctx, imgs, stages("2026-11"))
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	oc := out[0]
	if oc.Previous != "" || oc.Digest == "" {
		t.Errorf("first release: Previous = %q, Digest = %q; want no previous and a digest", oc.Previous, oc.Digest)
	}
	wantRef := imgs[0].Repos.Release + "@" + oc.Digest
	if oc.Promoted.Reference != wantRef {
		t.Errorf("Promoted.Reference = %q, want %q", oc.Promoted.Reference, wantRef)
	}
	if oc.Result == nil || !oc.Result.Passed || oc.Result.Digest != oc.Digest {
		t.Fatalf("verification result = %+v, want passed for %s", oc.Result, oc.Digest)
	}
	rf, err := promote.ReadFile(filepath.Join(images, "demo", promote.FileName))
	if err != nil {
		t.Fatalf("reading the release file: %v", err)
	}
	if len(rf.Releases) != 1 || rf.Releases[0].Source != oc.Ref || rf.Moving["demo"] != oc.Digest {
		t.Errorf("release file = %+v, want one release of %s with the moving tag demo", rf, oc.Ref)
	}
	if b, err := os.ReadFile(oc.Promoted.Changelog); err != nil || !strings.Contains(string(b), "First release") {
		t.Errorf("changelog %s = %q, %v; want a first-release note", oc.Promoted.Changelog, b, err)
	}

	// Users pin the moving tag: the digest comes back only after the gates.
	tag, err := name.NewTag(imgs[0].Repos.Release + ":demo")
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := promote.Pin(ctx, tag, promote.WithTrustedKeys(signPub), promote.WithVerifierKeys(verPub))
	if err != nil {
		t.Fatalf("Pin(%s) = %v", tag, err)
	}
	if pinned.Ref != wantRef {
		t.Errorf("Pin(%s) = %s, want %s", tag, pinned.Ref, wantRef)
	}

	// A re-run resumes: same digest, signing and verification found done.
	again, err := Run(ctx, imgs, stages("2026-11"))
	if err != nil {
		t.Fatalf("second Run() = %v", err)
	}
	if again[0].Digest != oc.Digest {
		t.Errorf("second run digest = %s, want %s (same lock, same image)", again[0].Digest, oc.Digest)
	}
	if got := strings.Join(again[0].Resumed, ","); got != StageSign+","+StageVerify {
		t.Errorf("second run resumed %q, want sign,verify", got)
	}

	// Next month with the same lock: nothing changed, and the table says so.
	next, err := Run(ctx, imgs, stages("2026-12"))
	if err != nil {
		t.Fatalf("next month's Run() = %v", err)
	}
	n := next[0]
	if n.Previous != oc.Ref || n.Changed != 0 || n.Delta != 0 {
		t.Errorf("next month: Previous = %q, Changed = %d, Delta = %d; want %q, 0, 0", n.Previous, n.Changed, n.Delta, oc.Ref)
	}
	if b, err := os.ReadFile(n.Promoted.Changelog); err != nil || !strings.Contains(string(b), "Changes since 2026-11") {
		t.Errorf("changelog %s = %q, %v; want the diff against 2026-11", n.Promoted.Changelog, b, err)
	}
	// The same digest is one release carrying both months' tags; the old tag stays.
	rf, err = promote.ReadFile(filepath.Join(images, "demo", promote.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(rf.Releases) != 1 || strings.Join(rf.Releases[0].Tags, ",") != "demo-2026.11,demo-2026.12" {
		t.Errorf("release file after two months of one digest = %+v; want one release tagged demo-2026.11,demo-2026.12", rf.Releases)
	}
	for _, tg := range []string{"demo-2026.11", "demo-2026.12", "demo"} {
		tag, err := name.NewTag(imgs[0].Repos.Release + ":" + tg)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := promote.Pin(ctx, tag, promote.WithTrustedKeys(signPub), promote.WithVerifierKeys(verPub)); err != nil || p.Ref != wantRef {
			t.Errorf("Pin(%s) = %v, %v; want %s", tag, p, err, wantRef)
		}
	}
}
