package sign_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/lock"
	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/sign"
)

// testLock2 is testLock with a linux/arm64 resolution beside the amd64 one.
func testLock2(t *testing.T) *lock.Lock {
	l := testLock()
	l.Base.Platform = "linux/amd64"
	arm := lock.Resolution{Platform: "linux/arm64", Base: l.Base, Pip: l.Pip}
	arm.Base.Platform, arm.Base.ManifestDigest = "linux/arm64", "sha256:"+strings.Repeat("e", 64)
	arm.Apt = []lock.Deb{{Name: "libgomp1", Version: "12.2.0-14", Arch: "arm64", URL: "http://mirror/pool/libgomp1_arm64.deb", SHA256: strings.Repeat("f", 64)}}
	l.Platforms = []lock.Resolution{arm}
	if _, err := lock.Marshal(l); err != nil {
		t.Fatal(err)
	}
	return l
}

// pushIndex pushes an index of one image per named platform, each shaped
// like the build of that platform's view of l.
func pushIndex(t *testing.T, repo string, l *lock.Lock, platforms ...string) name.Digest {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		view, err := l.ForPlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := sbomtest.Image(view)
		if err != nil {
			t.Fatal(err)
		}
		pl, _ := v1.ParsePlatform(p)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: pl}})
	}
	return writeIndex(t, repo, adds)
}

// writeIndex pushes an OCI index of adds to repo and returns it.
func writeIndex(t *testing.T, repo string, adds []mutate.IndexAddendum) name.Digest {
	t.Helper()
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json"), adds...)
	h, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := name.NewDigest(repo + "@" + h.String())
	if err := remote.WriteIndex(d, idx); err != nil {
		t.Fatal(err)
	}
	return d
}

// SignAndAttest of a two-platform build signs the index and both children;
// each child's SBOM is its own platform's, the index carries the lock and
// the provenance.
func TestSignAndAttestIndex(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t)
	l := testLock2(t)
	ref := pushIndex(t, reg+"/staging/img", l, "linux/amd64", "linux/arm64")
	priv, pub := keyPair(t)
	key := sign.WithKey(priv, []byte(testPassword))
	if err := sign.SignAndAttest(ctx, ref, l, sign.Builder{BuildKitVersion: "v0.34.2", SourceCommit: testCommit}, key); err != nil {
		t.Fatalf("SignAndAttest(index) = %v", err)
	}
	if err := sign.VerifySignature(ctx, ref, pub); err != nil {
		t.Errorf("Verify(index) = %v", err)
	}
	if n := layers(t, ref, ".att"); n != 2 {
		t.Errorf("index attestation layers = %d, want 2 (lock, provenance)", n)
	}
	children, err := sign.Children(ctx, ref, l)
	if err != nil || len(children) != 2 {
		t.Fatalf("Children = %v, %v", children, err)
	}
	for _, c := range children {
		if err := sign.VerifySignature(ctx, c.Ref, pub); err != nil {
			t.Errorf("Verify(%s child) = %v", c.Platform, err)
		}
		if n := layers(t, c.Ref, ".att"); n != 4 {
			t.Errorf("%s child attestation layers = %d, want 4 (lock, SPDX, CycloneDX, provenance)", c.Platform, n)
		}
		arch := strings.TrimPrefix(c.Platform, "linux/")
		for _, typ := range []string{sign.SPDXPredicateType, sign.CycloneDXPredicateType} {
			preds, err := sign.VerifyAttestations(ctx, c.Ref, typ, pub)
			if err != nil || len(preds) != 1 {
				t.Fatalf("VerifyAttestations(%s child, %s) = %d, %v", c.Platform, typ, len(preds), err)
			}
			if !strings.Contains(string(preds[0]), "arch="+arch) || !strings.Contains(string(preds[0]), c.Ref.DigestStr()) {
				t.Errorf("%s child %s SBOM does not name its digest and its %s debs:\n%.600s", c.Platform, typ, arch, preds[0])
			}
		}
	}
}

// An index that lacks one of the lock's platforms is refused before
// anything is signed.
func TestSignAndAttestIndexMissingPlatform(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t)
	l := testLock2(t)
	ref := pushIndex(t, reg+"/staging/img", l, "linux/amd64")
	priv, _ := keyPair(t)
	err := sign.SignAndAttest(ctx, ref, l, sign.Builder{}, sign.WithKey(priv, []byte(testPassword)))
	if err == nil || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
		t.Fatalf("SignAndAttest(index without arm64) = %v, want an error naming the lock's platforms", err)
	}
	tag, _ := name.NewTag(attachmentTag(t, ref, ".sig").String())
	if _, err := remote.Head(tag); err == nil {
		t.Errorf("a signature was written for %s", ref)
	}
}

// pushPlatforms pushes an index of one random image per platform (nil: an
// entry without one) and returns it.
func pushPlatforms(t *testing.T, repo string, platforms ...*v1.Platform) name.Digest {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		img, err := random.Image(128, 1)
		if err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return writeIndex(t, repo, adds)
}

// Children lists an index's images in the order of the lock's platforms;
// an entry without a platform, or two of one platform, is refused.
func TestChildren(t *testing.T) {
	ctx := context.Background()
	repo := newRegistry(t) + "/staging/img"
	l := testLock2(t)
	amd, arm := &v1.Platform{OS: "linux", Architecture: "amd64"}, &v1.Platform{OS: "linux", Architecture: "arm64"}
	ref := pushPlatforms(t, repo, arm, amd)
	cs, err := sign.Children(ctx, ref, l)
	if err != nil {
		t.Fatalf("Children = %v", err)
	}
	im, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := im.IndexManifest()
	want := []sign.Child{{Platform: "linux/amd64", Ref: ref.Context().Digest(m.Manifests[1].Digest.String())}, {Platform: "linux/arm64", Ref: ref.Context().Digest(m.Manifests[0].Digest.String())}}
	if len(cs) != 2 || cs[0] != want[0] || cs[1] != want[1] {
		t.Errorf("Children = %+v, want %+v (the lock's order)", cs, want)
	}
	for _, tc := range []struct {
		platforms []*v1.Platform
		want      string
	}{
		{[]*v1.Platform{amd, nil}, "has no platform"},
		{[]*v1.Platform{amd, amd}, "has two linux/amd64 images"},
	} {
		if _, err := sign.Children(ctx, pushPlatforms(t, repo, tc.platforms...), l); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Children(%v) = %v, want an error with %q", tc.platforms, err, tc.want)
		}
	}
}
