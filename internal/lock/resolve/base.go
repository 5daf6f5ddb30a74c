package resolve

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/mirror"
)

// NotMirroredError reports a base that the spec's mirror does not hold.
type NotMirroredError struct {
	// Base is the spec's base, Mirror where the lock looked for it.
	Base, Mirror string
	Err          error
}

func (e *NotMirroredError) Error() string {
	return fmt.Sprintf("base %s is not in the mirror (%s not found): run `imagectl mirror` on the spec first", e.Base, e.Mirror)
}

func (e *NotMirroredError) Unwrap() error { return e.Err }

// resolveBase resolves ref to its index digest and the digest of its
// manifest for platform, and returns the manifest's creation time (0 when unset). With a
// mirror (repos.mirror) it resolves ref's copy there instead, and never
// asks ref's own registry: the mirror is where builds pull from.
func resolveBase(ctx context.Context, ref, mirrorPrefix string, platform v1.Platform, ropts []remote.Option) (lock.Base, int64, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return lock.Base{}, 0, fmt.Errorf("base %q: %w", ref, err)
	}
	b := lock.Base{Ref: ref, Platform: platform.String()}
	if mirrorPrefix != "" {
		if r, err = mirror.Ref(ref, mirrorPrefix); err != nil {
			return lock.Base{}, 0, err
		}
		b.Mirror = r.Context().Name()
	}
	opts := append(append([]remote.Option{}, ropts...), remote.WithContext(ctx))
	desc, err := remote.Get(r, opts...)
	if err != nil {
		if mirrorPrefix != "" && auth.NotFound(err) {
			return lock.Base{}, 0, &NotMirroredError{Base: ref, Mirror: r.String(), Err: err}
		}
		return lock.Base{}, 0, fmt.Errorf("resolving base %q: %w", r, err)
	}
	b.IndexDigest = desc.Digest.String()
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return lock.Base{}, 0, fmt.Errorf("reading base index %q: %w", ref, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return lock.Base{}, 0, fmt.Errorf("reading base index %q: %w", ref, err)
		}
		var found *v1.Descriptor
		for i, m := range im.Manifests {
			if m.Platform != nil && m.Platform.OS == platform.OS && m.Platform.Architecture == platform.Architecture {
				found = &im.Manifests[i]
				break
			}
		}
		if found == nil {
			return lock.Base{}, 0, fmt.Errorf("base %q has no %s manifest", ref, platform)
		}
		b.ManifestDigest = found.Digest.String()
		img, err = idx.Image(found.Digest)
		if err != nil {
			return lock.Base{}, 0, fmt.Errorf("reading base %q %s: %w", ref, platform, err)
		}
	} else {
		b.ManifestDigest = desc.Digest.String()
		img, err = desc.Image()
		if err != nil {
			return lock.Base{}, 0, fmt.Errorf("reading base %q: %w", ref, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return lock.Base{}, 0, fmt.Errorf("reading base %q config: %w", ref, err)
	}
	if cf.OS != "" && (cf.OS != platform.OS || cf.Architecture != platform.Architecture) {
		return lock.Base{}, 0, fmt.Errorf("base %q is %s/%s, want %s", ref, cf.OS, cf.Architecture, platform)
	}
	var created int64
	if !cf.Created.IsZero() && cf.Created.Unix() > 0 {
		created = cf.Created.Unix()
	}
	return b, created, nil
}
