// Package discover is the users' side of the registry: what a user who pins
// digests can learn with only the registry and the platform's public keys,
// never the platform's git. Releases lists a release repository's tags,
// digests and months with what each signed lock attestation says;
// Compare tells two releases apart from their signed SBOMs and scans;
// a Resolver finds the newest release of a line that passes pin's gates.
package discover

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/errgroup"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/sign"
)

// Release is one digest of a release repository and its tags.
type Release struct {
	// Ref is repository@sha256:..., what a pin holds.
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	// Tags are its immutable release tags (IMAGE-YYYY.MM[.N]), sorted.
	Tags []string `json:"tags"`
	// Moving are the moving tags that point at it now.
	Moving []string `json:"moving,omitempty"`
	// Month is the release month (YYYY-MM) of its newest release tag, and
	// Rerelease that tag's N (0 for IMAGE-YYYY.MM).
	Month     string `json:"month"`
	Rerelease int    `json:"rerelease,omitempty"`
	// Verified is true when the digest passes pin's gates under the keys:
	// signature, lock attestation, passing verification (each platform).
	Verified bool `json:"verified"`
	// Refusals say why not, when Verified is false.
	Refusals []string `json:"refusals,omitempty"`
	// Lock is what the signed lock attestation says; nil when no lock
	// attestation verifies under the keys.
	Lock *promote.LockSummary `json:"lock,omitempty"`
	// Platforms of an image index (empty for one platform).
	Platforms []string `json:"platforms,omitempty"`
	// Support is the signed support window, when the release has one.
	Support *Support `json:"support,omitempty"`
}

// Tag is the release's newest release tag, or its first moving tag when it
// has none.
func (r Release) Tag() string {
	if len(r.Tags) > 0 {
		return r.Tags[len(r.Tags)-1]
	}
	if len(r.Moving) > 0 {
		return r.Moving[0]
	}
	return ""
}

// releaseTagRE matches an immutable release tag (releasefile.NextTag):
// IMAGE-YYYY.MM or IMAGE-YYYY.MM.N.
var releaseTagRE = regexp.MustCompile(`^(.+)-([0-9]{4})\.(0[1-9]|1[0-2])(?:\.([0-9]+))?$`)

// ParseReleaseTag returns the image, month (YYYY-MM) and re-release number
// of a release tag; ok is false for any other tag (a moving tag).
func ParseReleaseTag(tag string) (image, month string, n int, ok bool) {
	m := releaseTagRE.FindStringSubmatch(tag)
	if m == nil {
		return "", "", 0, false
	}
	if m[4] != "" {
		n, _ = strconv.Atoi(m[4])
	}
	return m[1], m[2] + "-" + m[3], n, true
}

// NotFoundError is a repository with no tags, or none at all.
type NotFoundError struct{ Repository string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s has no release tags", e.Repository)
}

// Releases lists repo's releases, newest first (by month, then
// re-release number): every digest that carries a tag other than cosign's
// sha256-* ones, with its release and moving tags, each checked against
// the keys with pin's gates and its signed lock attestation read.
func Releases(ctx context.Context, repo name.Repository, opts ...Option) ([]Release, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return o.releases(ctx, repo)
}

func (o *options) releases(ctx context.Context, repo name.Repository) ([]Release, error) {
	ro := o.remoteOptions(ctx)
	tags, err := remote.List(repo, ro...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == 404 {
			return nil, &NotFoundError{Repository: repo.String()}
		}
		if u := auth.Unreachable("registry", repo.RegistryStr(), err); u != nil {
			return nil, fmt.Errorf("listing %s: %w", repo, u)
		}
		return nil, o.access.Classify(fmt.Errorf("listing the tags of %s: %w", repo, err))
	}
	var wanted []string
	for _, t := range tags {
		if !strings.HasPrefix(t, "sha256-") {
			wanted = append(wanted, t)
		}
	}
	if len(wanted) == 0 {
		return nil, &NotFoundError{Repository: repo.String()}
	}
	digests := make([]string, len(wanted))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, t := range wanted {
		g.Go(func() error {
			desc, err := remote.Head(repo.Tag(t), o.remoteOptions(gctx)...)
			if err != nil {
				return o.access.Classify(fmt.Errorf("resolving %s:%s: %w", repo, t, err))
			}
			digests[i] = desc.Digest.String()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	byDigest := map[string]*Release{}
	var order []string
	for i, t := range wanted {
		r := byDigest[digests[i]]
		if r == nil {
			r = &Release{Ref: repo.Digest(digests[i]).String(), Digest: digests[i]}
			byDigest[digests[i]] = r
			order = append(order, digests[i])
		}
		if _, month, n, ok := ParseReleaseTag(t); ok {
			r.Tags = append(r.Tags, t)
			if month > r.Month || (month == r.Month && n > r.Rerelease) {
				r.Month, r.Rerelease = month, n
			}
		} else {
			r.Moving = append(r.Moving, t)
		}
	}
	out := make([]Release, len(order))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, d := range order {
		r := byDigest[d]
		sort.Strings(r.Tags)
		sort.Strings(r.Moving)
		g.Go(func() error {
			if err := o.check(gctx, repo.Digest(d), r); err != nil {
				return err
			}
			out[i] = *r
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sortNewest(out)
	return out, nil
}

// sortNewest orders releases newest first: month, re-release, then digest
// for a stable order; releases without a month last.
func sortNewest(rs []Release) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Month != b.Month {
			return a.Month > b.Month
		}
		if a.Rerelease != b.Rerelease {
			return a.Rerelease > b.Rerelease
		}
		return a.Digest < b.Digest
	})
}

// check runs pin's gates on d and reads its lock attestation and support
// window into r. A refusal is recorded; a registry failure is an error.
func (o *options) check(ctx context.Context, d name.Digest, r *Release) error {
	p, err := promote.PinDigest(ctx, d, o.pinOptions()...)
	var refused *promote.RefusedError
	switch {
	case errors.As(err, &refused):
		for _, rf := range refused.Refusals {
			r.Refusals = append(r.Refusals, fmt.Sprintf("gate %s: %s", rf.Gate, rf.Reason))
		}
	case err != nil:
		return err
	default:
		r.Verified = true
		s := p.Lock
		r.Lock = &s
	}
	if len(o.keys) == 0 {
		return nil
	}
	found, err := sign.InspectKeys(ctx, d, o.keys, o.signOptions()...)
	if err != nil {
		return err
	}
	for _, f := range found {
		if len(r.Platforms) == 0 {
			for _, pb := range f.Predicates[sign.LockPredicateType] {
				if l, err := lock.Parse("lock attestation", pb); err == nil {
					if r.Lock == nil {
						s := promote.Summarize(l)
						r.Lock = &s
					}
					r.Platforms = append(r.Platforms, l.Base.Platform)
					for _, pl := range l.Platforms {
						r.Platforms = append(r.Platforms, pl.Platform)
					}
					break
				}
			}
		}
		if r.Support == nil {
			for _, pb := range f.Predicates[SupportPredicateType] {
				if s, err := ParseSupport(pb); err == nil {
					r.Support = s
					break
				}
			}
		}
	}
	return nil
}
