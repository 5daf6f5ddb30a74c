package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"imagectl/internal/spec"
	"imagectl/internal/testenv"
)

// TestE2EMirrorUpstream mirrors the upstream fixture's nvidia/cuda bases
// into the platform registry (both real distribution registries), then
// again: the second run uploads nothing.
func TestE2EMirrorUpstream(t *testing.T) {
	e := testenv.Get(t)
	ctx := context.Background()
	m := fmt.Sprintf("%s/e2e/mirror-%d", e.Registry, time.Now().UnixNano())
	var imgs []spec.Image
	for _, tag := range testenv.UpstreamCUDATags {
		imgs = append(imgs, spec.Image{Name: "cuda-" + tag, Base: e.UpstreamCUDA(t, tag), Repos: spec.Repos{Mirror: m}})
	}
	first, err := Run(ctx, imgs)
	if err != nil {
		t.Fatalf("mirror: %v", err)
	}
	for _, r := range first {
		t.Logf("first run: %s -> %s: %+v", r.Source, r.Target, r.Uploaded)
		if r.Present || r.Uploaded.Manifests == 0 || len(r.Platforms) == 0 || r.Platforms[0] != "linux/amd64" {
			t.Errorf("first run %s: %+v, want a fresh copy of a linux/amd64 index", r.Source, r)
		}
		repo, err := Target(r.Source, m)
		if err != nil {
			t.Fatal(err)
		}
		up, err := remote.Head(mustRef(t, r.Source))
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Head(repo.Digest(r.Digest))
		if err != nil || got.Digest != up.Digest || got.MediaType != up.MediaType {
			t.Errorf("mirror %s = %v, %v; want the upstream's %s %s", repo, got, err, up.MediaType, up.Digest)
		}
	}
	// The two tags share their one layer: it is uploaded once.
	if len(first) == 2 && first[1].Uploaded.Bytes >= first[0].Uploaded.Bytes {
		t.Errorf("second base uploaded %d bytes, the first %d: the shared layer was uploaded twice", first[1].Uploaded.Bytes, first[0].Uploaded.Bytes)
	}

	// A two-platform index (the fixture's linux/amd64 image and a small
	// linux/arm64 one) on the upstream: both platforms reach the mirror.
	multi := multiPlatformUpstream(t, e.UpstreamCUDA(t, testenv.UpstreamCUDATags[0]), fmt.Sprintf("e2e-multi-%d", time.Now().UnixNano()))
	imgs = append(imgs, spec.Image{Name: "multi", Base: multi, Repos: spec.Repos{Mirror: m}})
	res, err := Run(ctx, imgs[len(imgs)-1:])
	if err != nil {
		t.Fatalf("mirror %s: %v", multi, err)
	}
	if d := cmp.Diff([]string{"linux/amd64", "linux/arm64/v8"}, res[0].Platforms); d != "" {
		t.Errorf("platforms of %s (-want +got):\n%s", multi, d)
	}
	// The amd64 image is in the mirror already (from the first tag): only
	// the arm64 image's blobs travel.
	if res[0].Uploaded.Blobs != 2 || res[0].Uploaded.Bytes >= first[0].Uploaded.Bytes {
		t.Errorf("mirroring %s uploaded %+v, want only the arm64 image's config and layer", multi, res[0].Uploaded)
	}
	repo, _ := Target(multi, m)
	idx, err := remote.Index(repo.Digest(res[0].Digest))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	for _, d := range im.Manifests {
		if _, err := remote.Image(repo.Digest(d.Digest.String())); err != nil {
			t.Errorf("the mirror lacks the %s manifest %s: %v", d.Platform, d.Digest, err)
		}
	}

	// A mirror of the mirror in the same registry: every blob is mounted
	// across repositories, none uploaded.
	inner, err := Ref(imgs[0].Base, m)
	if err != nil {
		t.Fatal(err)
	}
	m2 := m + "-again"
	res, err = Run(ctx, []spec.Image{{Name: "inner", Base: inner.String(), Repos: spec.Repos{Mirror: m2}}})
	if err != nil {
		t.Fatalf("mirror %s: %v", inner, err)
	}
	t.Logf("mirror of the mirror %s -> %s: %+v", inner, res[0].Target, res[0].Uploaded)
	if u := res[0].Uploaded; u.Bytes != 0 || u.Blobs != 0 || u.Mounted == 0 {
		t.Errorf("mirroring %s within its registry uploaded %+v, want every blob mounted", inner, u)
	}

	again, err := Run(ctx, imgs)
	if err != nil {
		t.Fatalf("mirror again: %v", err)
	}
	for _, r := range again {
		t.Logf("second run: %s: present %v, %+v", r.Source, r.Present, r.Uploaded)
		if !r.Present || r.Uploaded != (Uploads{}) {
			t.Errorf("second run %s: present %v, uploaded %+v; want present and 0 bytes uploaded", r.Source, r.Present, r.Uploaded)
		}
	}
}

// multiPlatformUpstream pushes, next to fixture on the upstream registry, an
// OCI index tagged tag holding fixture's linux/amd64 image and a small
// random linux/arm64 image, and returns its reference.
func multiPlatformUpstream(t *testing.T, fixture, tag string) string {
	t.Helper()
	src := mustRef(t, fixture)
	amd64, err := remote.Image(src, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		t.Fatal(err)
	}
	arm64, err := random.Image(64<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := arm64.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = "linux", "arm64", "v8"
	if arm64, err = mutate.ConfigFile(arm64, cf); err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: amd64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}})
	ref := src.Context().Tag(tag)
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}
