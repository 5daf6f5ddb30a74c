package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

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
