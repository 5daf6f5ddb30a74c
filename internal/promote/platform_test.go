package promote_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/sign"
)

// twoPlatformIndex makes f's lock a linux/amd64 + linux/arm64 lock
// (written to git) and pushes an image index of two images to staging:
// the index signed with its lock and provenance (no SBOMs), each image
// signed with every build attestation; none verified.
func (f *fixture) twoPlatformIndex() (name.Digest, map[string]name.Digest) {
	t := f.t
	t.Helper()
	f.lock.Base.Platform = "linux/amd64"
	arm := lock.Resolution{Platform: "linux/arm64", Base: f.lock.Base, Pip: f.lock.Pip}
	arm.Base.Platform = "linux/arm64"
	f.lock.Platforms = []lock.Resolution{arm}
	if err := lock.Write(filepath.Join(f.dir, lock.FileName), f.lock); err != nil {
		t.Fatal(err)
	}
	idx := mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json")
	children := map[string]name.Digest{}
	for _, a := range []string{"amd64", "arm64"} {
		img, _ := random.Image(512, 1)
		children["linux/"+a] = f.pushImage(img)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	h, _ := idx.Digest()
	src, _ := name.NewDigest(f.staging + "@" + h.String())
	if err := remote.WriteIndex(src, idx); err != nil {
		t.Fatal(err)
	}
	f.sign(src, f.signer)
	f.attestLock(src, f.lock, f.signer)
	f.attestBuild(src, f.signer, sign.SPDXPredicateType, sign.CycloneDXPredicateType) // an index has no SBOMs of its own
	for _, c := range children {
		f.sign(c, f.signer)
		f.attestLock(c, f.lock, f.signer)
		f.attestBuild(c, f.signer)
	}
	return src, children
}

// A two-platform release: the index is signed and carries the lock; only
// the amd64 image was verified. Promotion refuses it unless linux/arm64 is
// named skippable; then the index, both images and the amd64 image's
// verification reach the release repository, and pin returns the index.
func TestPromoteMultiPlatformIndex(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, newInProcessRegistry(t))
	src, children := f.twoPlatformIndex()
	amd := children["linux/amd64"]
	f.attestVerification(amd, f.passing(amd), f.ver)
	path := f.releaseFile(nil, releasefile.Release{Source: src.String(), Month: "2026-12", Tags: []string{"2.6-2026.12"}})

	_, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
	var re *promote.RefusedError
	if !errors.As(err, &re) || !re.Has(promote.GateVerification) || !strings.Contains(err.Error(), "linux/arm64 "+children["linux/arm64"].DigestStr()) || strings.Contains(err.Error(), "linux/amd64 sha256") {
		t.Fatalf("Run(index, arm64 unverified) = %v, want a verification refusal naming linux/arm64 only", err)
	}

	res, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true), promote.WithSkipPlatforms("linux/arm64"))...)
	if err != nil {
		t.Fatalf("Run(index, --skip-platform linux/arm64) = %v", err)
	}
	t.Logf("%d actions", len(res.Actions))
	rel, _ := name.NewRepository(f.release)
	for _, d := range []name.Digest{src, amd, children["linux/arm64"]} {
		if _, err := remote.Head(rel.Digest(d.DigestStr())); err != nil {
			t.Errorf("%s is not in the release repository: %v", d.DigestStr(), err)
		}
	}
	// The amd64 image's verification came along, so the release repository
	// holds its proof too.
	att := rel.Tag("sha256-" + strings.TrimPrefix(amd.DigestStr(), "sha256:") + ".att")
	if _, err := remote.Head(att); err != nil {
		t.Errorf("the amd64 image's attestations %s were not promoted: %v", att, err)
	}

	p, err := promote.Pin(ctx, rel.Tag("2.6-2026.12"), f.opts(promote.WithSkipPlatforms("linux/arm64"))...)
	if err != nil {
		t.Fatalf("Pin = %v", err)
	}
	if p.Digest != src.DigestStr() {
		t.Errorf("Pin = %s, want the index %s", p.Digest, src.DigestStr())
	}
	// Skipping every platform still needs one verified image.
	_, err = promote.Pin(ctx, rel.Tag("2.6-2026.12"), promote.WithTrustedKeys(f.signer.pub), promote.WithVerifierKeys(f.other.pub), promote.WithSkipPlatforms("linux/arm64", "linux/amd64"))
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "no platform of the image index is verified") {
		t.Errorf("Pin(no verified platform) = %v, want a refusal", err)
	}
}
