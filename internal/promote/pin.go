package promote

import (
	"context"
	"fmt"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/releasefile"
)

// Pinned is a release tag resolved to a verified digest.
type Pinned struct {
	// Ref is what users paste into job specs: repo@sha256:...
	Ref    string `json:"ref"`
	Tag    string `json:"tag"`
	Digest string `json:"digest"`
	// Lock summarizes the attested lock the image was built from.
	Lock LockSummary `json:"lock"`
	// Platforms, when Digest is a multi-platform image's index, are its
	// images, each verified or skipped (WithSkipPlatforms); nil for a
	// single-platform image.
	Platforms []PlatformVerification `json:"platforms,omitempty"`
	// SupportEnd is the last day of the release's signed support window,
	// when it has one (filled by the caller that reads it).
	SupportEnd string `json:"support_end,omitempty"`
}

// LockSummary is the part of a lock users look at.
type LockSummary struct {
	Name         string `json:"name"`
	Digest       string `json:"digest"`
	Spec         string `json:"spec"`
	Base         string `json:"base"`
	CUDA         string `json:"cuda,omitempty"`
	Torch        string `json:"torch,omitempty"`
	TorchVariant string `json:"torch_variant,omitempty"`
	Python       string `json:"python"`
	NCCL         string `json:"nccl,omitempty"`
	CUDNN        string `json:"cudnn,omitempty"`
	DriverFloor  string `json:"driver_floor,omitempty"`
	Debs         int    `json:"debs"`
	Wheels       int    `json:"wheels"`
}

// Summarize returns the summary of l.
func Summarize(l *lock.Lock) LockSummary {
	return LockSummary{
		Name: l.Name, Digest: l.Digest, Spec: l.Spec.Path, Base: l.Base.Ref,
		CUDA: l.Core.CUDA, Torch: l.Core.Torch, TorchVariant: l.Core.TorchVariant, Python: l.Core.Python,
		NCCL: l.Core.NCCL, CUDNN: l.Core.CUDNN, DriverFloor: l.Core.DriverFloor,
		Debs: len(l.Apt), Wheels: len(l.Pip),
	}
}

// Pin resolves tag to its digest and checks, on that digest, what
// promotion checked: a signature by a trusted key, a valid lock attestation
// by a trusted key, and a passing verification attestation for exactly
// this digest and that lock by a trusted verifier key. Any failure is a
// *RefusedError naming the gate.
func Pin(ctx context.Context, tag name.Tag, opts ...Option) (*Pinned, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Head(tag, o.remoteOptions(ctx)...)
	if err != nil {
		if u := auth.Unreachable("registry", tag.RegistryStr(), err); u != nil {
			return nil, fmt.Errorf("resolving %s: %w", tag, u)
		}
		return nil, o.classify(fmt.Errorf("resolving %s: %w", tag, err))
	}
	d := tag.Context().Digest(desc.Digest.String())
	p, err := o.pin(ctx, d)
	if err != nil {
		return nil, err
	}
	p.Tag = tag.String()
	return p, nil
}

// PinDigest is Pin for a digest already known (a tag listed with its
// digest, a pin found in a file): the same gates on d, no tag resolved;
// the Pinned's Tag is empty.
func PinDigest(ctx context.Context, d name.Digest, opts ...Option) (*Pinned, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return o.pin(ctx, d)
}

func (o *options) pin(ctx context.Context, d name.Digest) (*Pinned, error) {
	var platforms []PlatformVerification
	l, refusals, err := o.gates(ctx, d, wantLock{}, &platforms)
	if err != nil {
		return nil, err
	}
	if len(refusals) > 0 {
		return nil, &RefusedError{Pin: true, Refusals: refusals}
	}
	return &Pinned{Ref: d.String(), Digest: d.DigestStr(), Lock: Summarize(l), Platforms: platforms}, nil
}

// Listing is one release tag of a release file.
type Listing struct {
	Tag    string `json:"tag"`
	Digest string `json:"digest"`
	Month  string `json:"month"`
	// Moving is true for a moving tag (it follows the newest release).
	Moving     bool   `json:"moving"`
	Source     string `json:"source"`
	LockDigest string `json:"lock_digest,omitempty"`
	SupportEnd string `json:"support_end,omitempty"`
}

// List returns every tag of f, newest release first, moving tags before
// the release tags of their digest.
func List(f *releasefile.File) []Listing {
	var out []Listing
	for i := len(f.Releases) - 1; i >= 0; i-- {
		r := f.Releases[i]
		digest := r.Source
		if d, err := r.Digest(); err == nil {
			digest = d.DigestStr()
		}
		var movers []string
		for t, md := range f.Moving {
			if md == digest {
				movers = append(movers, t)
			}
		}
		sort.Strings(movers)
		for _, t := range movers {
			out = append(out, Listing{Tag: t, Digest: digest, Month: r.Month, Moving: true, Source: r.Source, LockDigest: r.LockDigest, SupportEnd: r.SupportEnd})
		}
		for _, t := range r.Tags {
			out = append(out, Listing{Tag: t, Digest: digest, Month: r.Month, Source: r.Source, LockDigest: r.LockDigest, SupportEnd: r.SupportEnd})
		}
	}
	return out
}
