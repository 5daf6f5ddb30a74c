package build

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
)

func layerInfos(t *testing.T, img v1.Image) []LayerInfo {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []LayerInfo
	for _, l := range ls {
		d, _ := l.Digest()
		sz, _ := l.Size()
		out = append(out, LayerInfo{Digest: d.String(), Size: sz})
	}
	return out
}

// PublishedLayers reads an image by its config's platform and an index by
// its manifests' platforms; Changed counts what a new image adds.
func TestPublishedLayersAndChanged(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	amd, _ := random.Image(512, 3)
	cf, _ := amd.ConfigFile()
	cf.OS, cf.Architecture = "linux", "amd64"
	amd, _ = mutate.ConfigFile(amd, cf)
	arm, _ := random.Image(256, 2)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}})
	id, _ := idx.Digest()
	ad, _ := amd.Digest()
	idxRef, _ := name.NewDigest(host + "/demo@" + id.String())
	imgRef, _ := name.NewDigest(host + "/one@" + ad.String())
	if err := remote.WriteIndex(idxRef, idx); err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(imgRef, amd); err != nil {
		t.Fatal(err)
	}

	one, err := PublishedLayers(ctx, imgRef)
	if err != nil || len(one) != 1 || len(one["linux/amd64"]) != 3 {
		t.Fatalf("PublishedLayers(image) = %v, %v; want linux/amd64 with 3 layers", one, err)
	}
	sets, err := PublishedLayers(ctx, idxRef)
	if err != nil || len(sets) != 2 || len(sets["linux/amd64"]) != 3 || len(sets["linux/arm64/v8"]) != 2 {
		t.Fatalf("PublishedLayers(index) = %v, %v; want linux/amd64 (3 layers) and linux/arm64/v8 (2)", sets, err)
	}

	// The new amd64 image keeps two of the three layers and adds one.
	next := layerInfos(t, amd)[:2]
	added := LayerInfo{Digest: "sha256:" + strings.Repeat("e", 64), Size: 1234}
	next = append(next, added)
	if got := sets.Changed("linux/amd64", next); got != (Change{Layers: 1, Bytes: 1234}) {
		t.Errorf("Changed(amd64) = %+v, want one layer of 1234 bytes", got)
	}
	// A platform the published index does not have is all new.
	if got := sets.Changed("linux/ppc64le", next); got.Layers != 3 {
		t.Errorf("Changed(new platform) = %+v, want all 3 layers", got)
	}

	missing, _ := name.NewDigest(host + "/none@sha256:" + strings.Repeat("0", 64))
	if _, err := PublishedLayers(ctx, missing); err == nil {
		t.Errorf("PublishedLayers(missing) = nil error")
	}
}
