package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/scan/report"
	"imagectl/internal/scan/scantest"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
	"imagectl/internal/verify"
)

// TestReleasePlatformsEndToEnd releases the demo for linux/amd64 and
// linux/arm64 on the real buildkitd, registry and containerd: the lock
// resolves both platforms (arm64 under QEMU), the build pushes one OCI image
// index, signing covers the index and both images, verify runs the amd64
// image in a containerd container (this host's platform) and reports arm64
// as not verified. Promotion is refused until the release names linux/arm64
// as a platform it may skip (nothing is written before); then both images
// are promoted under the index, pin returns the index digest, and podman
// runs the pinned reference's arm64 image through its init. The next
// month's periphery update is compared per platform.
func TestReleasePlatformsEndToEnd(t *testing.T) {
	if verify.HostPlatform() != "linux/amd64" {
		t.Skipf("this test verifies the linux/amd64 image on an amd64 host; this host is %s", verify.HostPlatform())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	dr := newDemoRelease(t, ctx, "e2e-release-platforms", 4<<20)
	env, imgs, images, keys := dr.env, dr.imgs, dr.images, dr.keys
	imgs[0].Base, imgs[0].Platforms = env.MultiBase(t), []string{"linux/amd64", "linux/arm64"}
	stages := func(month string, skip ...string) *Real { return dr.stages(t, month, skip...) }
	// Without --skip-platform the release stops at promotion: arm64 has no
	// verification of its own, and nothing is recorded or tagged.
	start := time.Now()
	out, err := Run(ctx, imgs, stages("2026-11"))
	t.Logf("first run (lock, build, sign, verify of two platforms): %.1fs", time.Since(start).Seconds())
	oc := out[0]
	var refused *promote.RefusedError
	if err == nil || oc.FailedStage != StagePromote || !errors.As(err, &refused) || exitcode.Code(err) != exitcode.PromotionRefused {
		t.Fatalf("Run() without skipping arm64 = stage %q, %v (exit %d); want the promotion refused (exit %d)", oc.FailedStage, err, exitcode.Code(err), exitcode.PromotionRefused)
	}
	if !strings.Contains(err.Error(), "linux/arm64") || strings.Contains(err.Error(), "linux/amd64 sha256") {
		t.Errorf("refusal = %v; want it to name linux/arm64 as unverified and not linux/amd64", err)
	}
	if _, err := os.Stat(filepath.Join(images, "demo", releasefile.FileName)); !os.IsNotExist(err) {
		t.Errorf("a refused promotion wrote %s (stat: %v)", releasefile.FileName, err)
	}
	if _, err := remote.Head(mustTag(t, imgs[0].Repos.Release+":demo")); err == nil {
		t.Errorf("a refused promotion tagged %s:demo", imgs[0].Repos.Release)
	}

	// The build is an index of the two platforms' images.
	indexRef, err := name.NewDigest(oc.Ref)
	if err != nil {
		t.Fatalf("Outcome.Ref = %q: %v", oc.Ref, err)
	}
	idx, err := remote.Index(indexRef)
	if err != nil {
		t.Fatalf("remote.Index(%s) = %v: the build of two platforms is not an index", indexRef, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Platforms) != 2 || len(im.Manifests) != 2 {
		t.Fatalf("Outcome.Platforms = %+v, index has %d manifests; want linux/amd64 and linux/arm64", oc.Platforms, len(im.Manifests))
	}
	child := map[string]string{}
	for _, p := range oc.Platforms {
		child[p.Platform] = p.Digest
		if p.Size <= 0 || p.Layers == 0 {
			t.Errorf("%s: size %d, %d layers; want both", p.Platform, p.Size, p.Layers)
		}
	}
	for _, m := range im.Manifests {
		if got := m.Platform.OS + "/" + m.Platform.Architecture; child[got] != m.Digest.String() {
			t.Errorf("index manifest %s is %s; Outcome.Platforms has %s for it", m.Digest, got, child[got])
		}
	}

	// The index and both images are signed; the verification result is the
	// amd64 image's, bound to it, listing arm64 as not verified.
	for _, ref := range []string{oc.Ref, imgs[0].Repos.Staging + "@" + child["linux/amd64"], imgs[0].Repos.Staging + "@" + child["linux/arm64"]} {
		d, _ := name.NewDigest(ref)
		if err := sign.VerifySignature(ctx, d, keys.signPub); err != nil {
			t.Errorf("VerifySignature(%s) = %v, want signed", ref, err)
		}
	}
	res := oc.Result
	if res == nil || !res.Passed || res.Digest != child["linux/amd64"] {
		t.Fatalf("verification result = %+v; want passed for the amd64 image %s", res, child["linux/amd64"])
	}
	want := map[string]string{"linux/amd64": verify.PlatformVerified, "linux/arm64": verify.PlatformNotVerified}
	for _, p := range oc.Platforms {
		if p.Verify != want[p.Platform] {
			t.Errorf("%s: verify status %q, want %q", p.Platform, p.Verify, want[p.Platform])
		}
	}
	if len(res.Platforms) != 2 {
		t.Errorf("Result.Platforms = %+v, want both platforms", res.Platforms)
	}

	// With linux/arm64 named as skippable the re-run resumes sign and
	// verify and promotes the index.
	// It scans too, under a vulnerabilities policy (the database holds
	// only pip's low advisory): each platform image is scanned with its own
	// SBOM and gated on its own vuln attestation (e2e_scan_test.go).
	withScan := stages("2026-11", "linux/arm64")
	withScan.cfg.VulnDB = scantest.BuildDB(t, time.Time{}, scantest.PipHg)
	gated := imgs[0]
	gated.Policy.Vulnerabilities = &spec.VulnerabilityPolicy{MaxSeverity: "high", FixableOnly: true}
	withScan.cfg.VulnPolicies = []spec.Image{gated}
	out, err = Run(ctx, imgs, withScan)
	if err != nil {
		t.Fatalf("Run() skipping arm64 = %v", err)
	}
	oc = out[0]
	if got := strings.Join(oc.Resumed, ","); got != StageSign+","+StageVerify {
		t.Errorf("second run resumed %q, want sign,verify", got)
	}
	if oc.Ref != indexRef.String() {
		t.Errorf("second run built %s, want the same index %s", oc.Ref, indexRef)
	}
	wantRef := imgs[0].Repos.Release + "@" + indexRef.DigestStr()
	if oc.Promoted.Reference != wantRef {
		t.Errorf("Promoted.Reference = %q, want %q", oc.Promoted.Reference, wantRef)
	}
	// Both images are in the release repository under the index, with
	// their signatures.
	for p, d := range child {
		ref, _ := name.NewDigest(imgs[0].Repos.Release + "@" + d)
		img, err := remote.Image(ref)
		if err != nil {
			t.Errorf("the %s image is not in the release repository: %v", p, err)
			continue
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.OS+"/"+cf.Architecture != p {
			t.Errorf("release %s image %s: config platform %s/%s (%v), want %s", p, ref, cf.OS, cf.Architecture, err, p)
		}
		if err := sign.VerifySignature(ctx, ref, keys.signPub); err != nil {
			t.Errorf("VerifySignature(%s) in the release repository = %v", ref, err)
		}
		// Each image has its own SBOMs; stock cosign verifies the CycloneDX one.
		if out, err := exec.CommandContext(ctx, filepath.Join(env.Bin, "cosign"), "verify-attestation", "--key", keys.signPub,
			"--insecure-ignore-tlog", "--allow-insecure-registry", "--type", "cyclonedx", ref.String()).CombinedOutput(); err != nil {
			t.Errorf("cosign verify-attestation --type cyclonedx %s (%s): %v\n%s", ref, p, err, out)
		}
		if r, err := report.Latest(ctx, ref, keys.signPub); err != nil || r.Image != imgs[0].Repos.Staging+"@"+d || latestFinding(r, "GHSA-mq26-g339-26xf") == nil {
			t.Errorf("the %s image's vuln attestation: %+v, %v; want its own scan finding pip's GHSA-mq26-g339-26xf", p, r, err)
		}
	}
	// The index has no scan of its own (by the signer key), and, arm64
	// being unverified, no test-result by the verifier key: admission
	// refuses the index digest.
	var none *sign.NoAttestationError
	for typ, pub := range map[string]string{report.VulnPredicateType: keys.signPub, verify.TestResultPredicateType: keys.verPub} {
		if _, err := sign.VerifyAttestations(ctx, mustDigest(t, wantRef), typ, pub); !errors.As(err, &none) {
			t.Errorf("the index %s carries a %s attestation (%v), want none", wantRef, typ, err)
		}
	}
	// Stock cosign verifies the promoted index.
	cmd := exec.CommandContext(ctx, filepath.Join(env.Bin, "cosign"), "verify", "--key", keys.signPub,
		"--insecure-ignore-tlog", "--allow-insecure-registry", wantRef)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("cosign verify %s: %v\n%s", wantRef, err, stderr.String())
	}

	// pin returns the index; without skipping arm64 it is refused.
	tag := mustTag(t, imgs[0].Repos.Release+":demo")
	trust := []promote.Option{promote.WithTrustedKeys(keys.signPub), promote.WithVerifierKeys(keys.verPub)}
	if _, err := promote.Pin(ctx, tag, trust...); exitcode.Code(err) != exitcode.PromotionRefused || !strings.Contains(fmt.Sprint(err), "linux/arm64") {
		t.Errorf("Pin(%s) without skipping arm64 = %v, want refused naming linux/arm64", tag, err)
	}
	pinned, err := promote.Pin(ctx, tag, append(trust, promote.WithSkipPlatforms("linux/arm64"))...)
	if err != nil {
		t.Fatalf("Pin(%s, skip arm64) = %v", tag, err)
	}
	if pinned.Ref != wantRef {
		t.Errorf("Pin(%s) = %s, want the index %s", tag, pinned.Ref, wantRef)
	}
	wantPin := map[string]string{"linux/amd64": promote.PlatformVerified, "linux/arm64": promote.PlatformSkipped}
	if len(pinned.Platforms) != 2 {
		t.Errorf("Pinned.Platforms = %+v, want both", pinned.Platforms)
	}
	for _, p := range pinned.Platforms {
		if p.Status != wantPin[p.Platform] || p.Digest != child[p.Platform] {
			t.Errorf("Pinned platform %+v, want %s %s %s", p, p.Platform, child[p.Platform], wantPin[p.Platform])
		}
	}
	// One reference for both node types: podman on an arm64 node (here
	// under QEMU) pulls the pinned index and runs its arm64 image through
	// that image's own init.
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("podman is needed (make deps): %v", err)
	}
	arm := exec.CommandContext(ctx, podman, "run", "--rm", "--tls-verify=false", "--network", "none", "--platform", "linux/arm64",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "-e", "IMAGECTL_STORAGE_TIMEOUT=1s",
		pinned.Ref, "/opt/venv/bin/python", "-c", "import demo_util, platform; print('machine=' + platform.machine())")
	if out, err := arm.CombinedOutput(); err != nil || !strings.Contains(string(out), "machine=aarch64") || !strings.Contains(string(out), "imagectl-init: ") {
		t.Errorf("podman run --platform linux/arm64 %s = %v:\n%s\nwant machine=aarch64, started by the init", pinned.Ref, err, out)
	}
	_ = exec.CommandContext(ctx, podman, "rmi", "--force", pinned.Ref).Run()

	b, err := os.ReadFile(oc.Promoted.Changelog)
	if err != nil || !strings.Contains(string(b), "## linux/amd64") || !strings.Contains(string(b), "## linux/arm64") {
		t.Errorf("changelog %s = %q, %v; want a section per platform", oc.Promoted.Changelog, b, err)
	}

	// Next month: a newer periphery wheel; each platform's image changes
	// only its small periphery layers, measured against the same platform.
	dr.nextMonth(t, ctx)
	next, err := Run(ctx, imgs, stages("2026-12", "linux/arm64"))
	if err != nil {
		t.Fatalf("next month's Run() = %v", err)
	}
	n := next[0]
	if n.Previous != oc.Ref || n.Digest == oc.Digest || len(n.Platforms) != 2 {
		t.Fatalf("next month: Previous %q, Digest %s, %d platforms; want %s, a new index, two platforms", n.Previous, n.Digest, len(n.Platforms), oc.Ref)
	}
	for _, p := range n.Platforms {
		t.Logf("next month %s: %d of %d layers, %d of %d bytes changed (%.2f%%)", p.Platform, p.Changed, p.Layers, p.Delta, p.Size, 100*float64(p.Delta)/float64(p.Size))
		if p.Changed == 0 || p.Changed >= p.Layers || p.Delta >= p.Size/20 {
			t.Errorf("next month %s changed %d of %d layers, %d of %d bytes; want only its small periphery layers (< 5%%)", p.Platform, p.Changed, p.Layers, p.Delta, p.Size)
		}
	}
	b, err = os.ReadFile(n.Promoted.Changelog)
	if err != nil || strings.Count(string(b), "demo-util") != 2 || strings.Contains(string(b), "demo-core") {
		t.Errorf("changelog %s = %q, %v; want demo-util 1.1.0 under each platform, no demo-core", n.Promoted.Changelog, b, err)
	}
}

func mustDigest(t *testing.T, s string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}
