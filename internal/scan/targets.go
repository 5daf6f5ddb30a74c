package scan

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/sign"
)

// Target is one image a scan reads: a single-platform image, or one
// platform's image inside an image index.
type Target struct {
	// Platform is "os/arch[/variant]" of an index's image; "" for a
	// single-platform image.
	Platform string
	Ref      name.Digest
}

// Targets is what scanning ref means: ref itself when it is an image, or
// each platform image of ref when it is an image index (the platform
// images carry the SBOMs; the index has none), in the index's order. An
// index entry without a platform is an error.
func Targets(ctx context.Context, ref name.Digest, opts ...Option) ([]Target, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Get(ref, append(o.remoteOptions(), remote.WithContext(ctx))...)
	if err != nil {
		return nil, o.access.Classify(fmt.Errorf("reading %s: %w", ref, err))
	}
	if !desc.MediaType.IsIndex() {
		return []Target{{Ref: ref}}, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading the image index %s: %w", ref, err)
	}
	children, err := sign.IndexImages(ref, idx)
	if err != nil {
		return nil, err
	}
	var out []Target
	for _, c := range children {
		out = append(out, Target{Platform: c.Platform, Ref: c.Ref})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("image index %s holds no image", ref)
	}
	return out, nil
}
