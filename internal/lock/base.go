package lock

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// platform is the only platform imagectl locks.
var platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// resolveBase resolves ref to its index digest and linux/amd64 manifest
// digest, and returns the manifest's creation time (0 when unset).
func resolveBase(ctx context.Context, ref string, ropts []remote.Option) (Base, int64, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return Base{}, 0, fmt.Errorf("base %q: %w", ref, err)
	}
	opts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, ropts...)
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return Base{}, 0, fmt.Errorf("resolving base %q: %w", ref, err)
	}
	b := Base{Ref: ref, IndexDigest: desc.Digest.String(), Platform: platform.String()}
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return Base{}, 0, fmt.Errorf("reading base index %q: %w", ref, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return Base{}, 0, fmt.Errorf("reading base index %q: %w", ref, err)
		}
		var found *v1.Descriptor
		for i, m := range im.Manifests {
			if m.Platform != nil && m.Platform.OS == platform.OS && m.Platform.Architecture == platform.Architecture {
				found = &im.Manifests[i]
				break
			}
		}
		if found == nil {
			return Base{}, 0, fmt.Errorf("base %q has no %s manifest", ref, platform)
		}
		b.ManifestDigest = found.Digest.String()
		img, err = idx.Image(found.Digest)
		if err != nil {
			return Base{}, 0, fmt.Errorf("reading base %q %s: %w", ref, platform, err)
		}
	} else {
		b.ManifestDigest = desc.Digest.String()
		img, err = desc.Image()
		if err != nil {
			return Base{}, 0, fmt.Errorf("reading base %q: %w", ref, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Base{}, 0, fmt.Errorf("reading base %q config: %w", ref, err)
	}
	if cf.OS != "" && (cf.OS != platform.OS || cf.Architecture != platform.Architecture) {
		return Base{}, 0, fmt.Errorf("base %q is %s/%s, want %s", ref, cf.OS, cf.Architecture, platform)
	}
	var created int64
	if !cf.Created.IsZero() && cf.Created.Unix() > 0 {
		created = cf.Created.Unix()
	}
	return b, created, nil
}

// pinned returns the base reference by manifest digest.
func (b Base) pinned() (string, error) {
	r, err := name.ParseReference(b.Ref)
	if err != nil {
		return "", fmt.Errorf("base %q: %w", b.Ref, err)
	}
	return r.Context().Digest(b.ManifestDigest).String(), nil
}
