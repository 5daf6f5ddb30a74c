package build

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/lock"
)

// LayerSets are the layer digests of a published image by platform
// ("linux/amd64"): of its one image, or of every image of its index.
type LayerSets map[string]map[string]bool

// PublishedLayers reads the layer digests of the image or image index d
// (what a build is compared with: the previous release).
func PublishedLayers(ctx context.Context, d name.Digest, opts ...remote.Option) (LayerSets, error) {
	desc, err := remote.Get(d, append(opts, remote.WithContext(ctx))...)
	if err != nil {
		return nil, err
	}
	out := LayerSets{}
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		if out[lock.PlatformName(cf.Platform())], err = layerSet(img); err != nil {
			return nil, err
		}
		return out, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			continue
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			return nil, err
		}
		if out[lock.PlatformName(m.Platform)], err = layerSet(img); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Change is what a build's image of one platform adds over a published
// image of the same platform: the layers it does not have, and their bytes.
type Change struct {
	Layers int
	Bytes  int64
}

// Changed compares layers, an image's of platform, with s's image of the
// same platform; a platform s does not have is all new.
func (s LayerSets) Changed(platform string, layers []LayerInfo) Change {
	var c Change
	for _, l := range layers {
		if !s[platform][l.Digest] {
			c.Layers++
			c.Bytes += l.Size
		}
	}
	return c
}

func layerSet(img v1.Image) (map[string]bool, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, layer := range layers {
		ld, err := layer.Digest()
		if err != nil {
			return nil, err
		}
		seen[ld.String()] = true
	}
	return seen, nil
}
