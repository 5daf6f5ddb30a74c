package scan_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/scan"
)

// Targets of an index are its images in its order, named by platform
// (variant included); of an image, the image itself; an index entry
// without a platform is refused.
func TestTargets(t *testing.T) {
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer s.Close()
	repo := strings.TrimPrefix(s.URL, "http://") + "/demo"
	push := func(platforms ...*v1.Platform) (name.Digest, []v1.Hash) {
		t.Helper()
		idx := mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json")
		var hs []v1.Hash
		for _, p := range platforms {
			img, err := random.Image(128, 1)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := img.Digest()
			hs = append(hs, h)
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
		}
		h, _ := idx.Digest()
		d, _ := name.NewDigest(repo + "@" + h.String())
		if err := remote.WriteIndex(d, idx); err != nil {
			t.Fatal(err)
		}
		return d, hs
	}
	ctx := context.Background()
	ref, hs := push(&v1.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}, &v1.Platform{OS: "linux", Architecture: "amd64"})
	got, err := scan.Targets(ctx, ref)
	if err != nil {
		t.Fatalf("Targets = %v", err)
	}
	want := []scan.Target{{Platform: "linux/arm/v7", Ref: ref.Context().Digest(hs[0].String())}, {Platform: "linux/amd64", Ref: ref.Context().Digest(hs[1].String())}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Targets = %+v, want %+v", got, want)
	}
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	single := ref.Context().Digest(h.String())
	if err := remote.Write(single, img); err != nil {
		t.Fatal(err)
	}
	if got, err := scan.Targets(ctx, single); err != nil || len(got) != 1 || got[0] != (scan.Target{Ref: single}) {
		t.Errorf("Targets(image) = %+v, %v; want the image itself", got, err)
	}
	noPlatform, _ := push(&v1.Platform{OS: "linux", Architecture: "amd64"}, nil)
	if _, err := scan.Targets(ctx, noPlatform); err == nil || !strings.Contains(err.Error(), "has no platform") {
		t.Errorf("Targets(index with an entry without a platform) = %v, want a has-no-platform error", err)
	}
}
