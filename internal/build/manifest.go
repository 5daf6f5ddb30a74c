package build

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/build/layerplan"
	"imagectl/internal/lock"
)

type manifestInfo struct {
	size   int64
	layers []v1.Descriptor
}

// readManifest reads the built image's manifest from the registry it was
// pushed to, else from the OCI layout; nil when the image went to neither.
func readManifest(ctx context.Context, r *Result, o *options) (*manifestInfo, error) {
	var img v1.Image
	switch {
	case r.Ref != "":
		ref, err := name.NewDigest(r.Ref, refNameOptions(r.Ref, o)...)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", r.Ref, err)
		}
		img, err = remote.Image(ref, readBackOptions(ctx, o, ref.RegistryStr())...)
		if err != nil {
			return nil, o.access.Classify(fmt.Errorf("reading back %s: %w", r.Ref, err))
		}
	case r.OCILayout != "":
		p, err := layout.FromPath(r.OCILayout)
		if err != nil {
			return nil, fmt.Errorf("reading the oci layout %s: %w", r.OCILayout, err)
		}
		h, err := v1.NewHash(r.Digest)
		if err != nil {
			return nil, err
		}
		img, err = p.Image(h)
		if err != nil {
			return nil, fmt.Errorf("reading %s from the oci layout %s: %w", r.Digest, r.OCILayout, err)
		}
	default:
		return nil, nil
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", r.Digest, err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return nil, err
	}
	info := &manifestInfo{size: int64(len(raw)) + m.Config.Size, layers: m.Layers}
	for _, l := range m.Layers {
		info.size += l.Size
	}
	return info, nil
}

// readBackOptions are the remote options for what the build pushed to
// registry: the access's, with the transport the registry checks
// authenticated for the push (and pull) scope before the solve.
func readBackOptions(ctx context.Context, o *options, registry string) []remote.Option {
	ropts := append(o.access.RemoteOptions(), remote.WithContext(ctx))
	if t := o.pinged[registry]; t != nil {
		ropts = append(ropts, remote.WithTransport(t))
	}
	return ropts
}

// readIndex reads the built index back (from the registry, else the OCI
// layout) and fills r.Platforms from its manifests, in the order of
// targets; nothing when the index went to neither.
func readIndex(ctx context.Context, r *Result, o *options, targets []buildTarget) error {
	var idx v1.ImageIndex
	switch {
	case r.Ref != "":
		ref, err := name.NewDigest(r.Ref, refNameOptions(r.Ref, o)...)
		if err != nil {
			return fmt.Errorf("parsing %q: %w", r.Ref, err)
		}
		idx, err = remote.Index(ref, append(o.access.RemoteOptions(), remote.WithContext(ctx))...)
		if err != nil {
			return o.access.Classify(fmt.Errorf("reading back %s: %w", r.Ref, err))
		}
	case r.OCILayout != "":
		p, err := layout.FromPath(r.OCILayout)
		if err != nil {
			return fmt.Errorf("reading the oci layout %s: %w", r.OCILayout, err)
		}
		h, err := v1.NewHash(r.Digest)
		if err != nil {
			return err
		}
		idx, err = p.ImageIndex()
		if err == nil {
			idx, err = idx.ImageIndex(h)
		}
		if err != nil {
			return fmt.Errorf("reading %s from the oci layout %s: %w", r.Digest, r.OCILayout, err)
		}
	default:
		return nil
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("reading the index %s: %w", r.Digest, err)
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return err
	}
	r.Size = int64(len(raw))
	for _, t := range targets {
		want := platformString(t.platform)
		var found *v1.Descriptor
		for i, m := range im.Manifests {
			if m.Platform != nil && m.Platform.OS == t.platform.OS && m.Platform.Architecture == t.platform.Architecture && m.Platform.Variant == t.platform.Variant {
				found = &im.Manifests[i]
				break
			}
		}
		if found == nil {
			return fmt.Errorf("the built index %s has no %s image", r.Digest, want)
		}
		img, err := idx.Image(found.Digest)
		if err != nil {
			return fmt.Errorf("reading the %s image of %s: %w", want, r.Digest, err)
		}
		m, err := img.Manifest()
		if err != nil {
			return fmt.Errorf("reading the manifest of %s: %w", found.Digest, err)
		}
		pi := PlatformImage{Platform: want, Digest: found.Digest.String(), Size: found.Size + m.Config.Size, Layers: nameLayers(t.lock, m.Layers)}
		for _, l := range m.Layers {
			pi.Size += l.Size
		}
		r.Size += pi.Size
		r.Platforms = append(r.Platforms, pi)
	}
	return nil
}

// nameLayers labels the manifest's layers with the planned layer each
// holds: the last layers are the planned ones, in order; the rest are the
// base's.
func nameLayers(l *lock.Lock, descs []v1.Descriptor) []LayerInfo {
	var planned []string
	for _, layer := range layerplan.Of(l).Layers {
		if layer.Kind != layerplan.KindBase {
			planned = append(planned, layer.Name)
		}
	}
	nbase := len(descs) - len(planned)
	out := make([]LayerInfo, len(descs))
	for i, d := range descs {
		n := "base"
		if nbase >= 0 && i >= nbase {
			n = planned[i-nbase]
		}
		out[i] = LayerInfo{Name: n, Digest: d.Digest.String(), Size: d.Size, MediaType: string(d.MediaType)}
	}
	return out
}

// refNameOptions are name.Insecure when ref's registry is marked insecure
// in the access.
func refNameOptions(ref string, o *options) []name.Option {
	return o.access.NameOptions(auth.RegistryOf(ref))
}
