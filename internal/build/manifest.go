package build

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

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
		ref, err := parseDigest(r.Ref, o)
		if err != nil {
			return nil, err
		}
		img, err = remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			return nil, fmt.Errorf("reading back %s: %w", r.Ref, err)
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

// nameLayers labels the manifest's layers with the planned layer each
// holds: the last layers are the planned ones, in order; the rest are the
// base's.
func nameLayers(l *lock.Lock, descs []v1.Descriptor) []LayerInfo {
	var planned []string
	for _, layer := range Plan(l).Layers {
		if layer.Kind != KindBase {
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

func nameOptions(o *options) []name.Option {
	if o != nil && o.registryHTTP {
		return []name.Option{name.Insecure}
	}
	return nil
}

func parseDigest(ref string, o *options) (name.Digest, error) {
	d, err := name.NewDigest(ref, nameOptions(o)...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("parsing %q: %w", ref, err)
	}
	return d, nil
}

// registryOf returns the registry host of ref ("" when ref is not a
// reference).
func registryOf(ref string) string {
	r, err := name.ParseReference(ref)
	if err != nil {
		return ""
	}
	return r.Context().RegistryStr()
}

func schemeOf(reg string, insecure bool) string {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.NewRegistry(reg, opts...)
	if err != nil {
		return "https"
	}
	return r.Scheme()
}
