package discover

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/bump"
	"imagectl/internal/exitcode"
)

// ResolveRef resolves a reference a user typed to a digest: repo@sha256:...
// as it is, repo:tag through the registry. A bare tag (no repository) is a
// tag of base, when base is not nil: diff's "NEW is a tag of OLD's line".
func ResolveRef(ctx context.Context, ref string, base *name.Repository, opts ...Option) (name.Digest, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return name.Digest{}, err
	}
	if base != nil && !strings.ContainsAny(ref, "/@") {
		ref = base.Name() + ":" + strings.TrimPrefix(ref, ":")
	} else if base != nil && strings.HasPrefix(ref, "sha256:") {
		ref = base.Name() + "@" + ref
	}
	if strings.Contains(ref, "@") {
		d, err := name.NewDigest(ref, name.StrictValidation)
		if err != nil {
			return name.Digest{}, exitcode.Wrap(exitcode.Usage, err)
		}
		return d, nil
	}
	t, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return name.Digest{}, exitcode.Wrap(exitcode.Usage, err)
	}
	desc, err := remote.Head(t, o.remoteOptions(ctx)...)
	if err != nil {
		if u := auth.Unreachable("registry", t.RegistryStr(), err); u != nil {
			return name.Digest{}, fmt.Errorf("resolving %s: %w", t, u)
		}
		return name.Digest{}, o.access.Classify(fmt.Errorf("resolving %s: %w", t, err))
	}
	return t.Context().Digest(desc.Digest.String()), nil
}

// Resolver finds the newest release of a line (a release repository) that
// passes pin's gates and is in support: bump's Resolver over the registry.
// It lists each repository once.
type Resolver struct {
	o   *options
	now func() time.Time
	mu  sync.Mutex
	got map[string][]Release
}

// NewResolver returns a Resolver under the options' keys and access.
func NewResolver(opts ...Option) (*Resolver, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return &Resolver{o: o, now: time.Now, got: map[string][]Release{}}, nil
}

// Releases is Releases(repo), listed once per Resolver.
func (r *Resolver) Releases(ctx context.Context, repo name.Repository) ([]Release, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rs, ok := r.got[repo.Name()]; ok {
		return rs, nil
	}
	rs, err := r.o.releases(ctx, repo)
	if err != nil {
		return nil, err
	}
	r.got[repo.Name()] = rs
	return rs, nil
}

// Target implements bump.Resolver: the newest release (by month) with a
// release tag that passes pin's gates. None, or the newest out of
// support, is a *bump.StuckError.
func (r *Resolver) Target(ctx context.Context, repo name.Repository) (*bump.Target, error) {
	rs, err := r.Releases(ctx, repo)
	if err != nil {
		if nf, ok := err.(*NotFoundError); ok {
			return nil, &bump.StuckError{Repository: repo.Name(), Reason: nf.Error()}
		}
		return nil, err
	}
	var refused []string
	for i, rel := range rs {
		if rel.Month == "" {
			continue
		}
		if !rel.Verified {
			refused = append(refused, fmt.Sprintf("%s (%s)", rel.Tag(), strings.Join(rel.Refusals, "; ")))
			continue
		}
		if rel.Support != nil && rel.Support.State(r.now()) == Expired {
			return nil, &bump.StuckError{Repository: repo.Name(),
				Reason: fmt.Sprintf("the newest release that passes the gates, %s, is out of support since %s", rel.Tag(), rel.Support.End)}
		}
		newer := map[string]bool{}
		for _, x := range rs[:i] {
			newer[x.Digest] = true
		}
		d := repo.Digest(rel.Digest)
		return &bump.Target{Digest: d, Tag: rel.Tag(), Month: rel.Month, Newer: func(pinned string) bool { return !newer[pinned] }}, nil
	}
	why := "no release tag"
	if len(refused) > 0 {
		why = "no release passes pin's gates: " + strings.Join(refused, ", ")
	}
	return nil, &bump.StuckError{Repository: repo.Name(), Reason: why}
}
