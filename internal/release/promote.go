package release

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/atomicfile"
	"imagectl/internal/discover"
	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/sign"
)

// Promote implements Stages: reconcile the release repository to the
// release file plus d's release, write the file (atomically, only once the
// registry holds the release: tags moved last), and write the month's
// changelog. It holds no lock across registry calls: each image has a
// release file of its own. The scan stage (Scan, scan.go) has attested d's
// vulnerabilities before, when a database was given.
//
// A release file whose repository is not the lock's repos.release moves to
// the new repository: every release is copied there, each gated against
// its own recorded lock.
func (r *Real) Promote(ctx context.Context, l *lock.Lock, d name.Digest) (Promoted, error) {
	relPath := r.releasePath(l.Name)
	f, err := r.releases(l.Name)
	if err != nil {
		return Promoted{}, err
	}
	prev := f.Previous(d)
	tag := releasefile.NextTag(f, l.Name, r.cfg.Month, d)
	rel := releasefile.Release{Source: d.String(), Tags: []string{tag}, Month: r.cfg.Month, LockDigest: l.Digest}
	if err := r.attestSupport(ctx, l, d, &rel); err != nil {
		return Promoted{}, err
	}
	if err := r.attestIndex(ctx, l, d); err != nil { // indexverify.go
		return Promoted{}, err
	}
	next, err := r.withRelease(f, l, rel)
	if err != nil {
		return Promoted{}, err
	}
	if _, err := promote.Reconcile(ctx, next,
		promote.WithConfirm(true),
		promote.WithRequireContainerRuntime(r.cfg.RequireContainerRuntime),
		promote.WithSkipPlatforms(r.cfg.SkipPlatforms...),
		promote.WithTrustedKeys(r.cfg.PublicKey),
		promote.WithVerifierKeys(r.cfg.VerifierPublicKey),
		promote.WithLockFile(r.lockPath(l.Name)),
		promote.WithAccess(r.cfg.Access),
		promote.WithRemoteOptions(r.cfg.RemoteOptions...),
		promote.WithVulnerabilityPolicies(r.cfg.VulnPolicies...),
	); err != nil {
		return Promoted{}, err
	}
	// Re-read under the file's lock before writing: what another process
	// recorded meanwhile stays.
	if err := releasefile.Update(ctx, relPath, func(f *releasefile.File) (*releasefile.File, error) {
		if f == nil {
			f = &releasefile.File{}
		}
		return r.withRelease(f, l, rel)
	}); err != nil {
		return Promoted{}, fmt.Errorf("recording the release in %s: %w", relPath, err)
	}
	p := Promoted{Reference: l.Repos.Release + "@" + d.DigestStr(), Tags: append(rel.Tags, l.Name)}
	p.Changelog, err = r.writeChangelog(ctx, l, tag, prev)
	return p, err
}

// withRelease is f with rel added and the moving tag NAME on it, in the
// lock's release repository.
func (r *Real) withRelease(f *releasefile.File, l *lock.Lock, rel releasefile.Release) (*releasefile.File, error) {
	n := *f
	if n.Image == "" {
		n.Image = l.Name
	}
	if n.Image != l.Name {
		return nil, fmt.Errorf("%s is the release file of %s, not of %s", r.releasePath(l.Name), n.Image, l.Name)
	}
	n.Repository = l.Repos.Release
	if err := n.Add(rel, l.Name); err != nil {
		return nil, err
	}
	return &n, nil
}

// writeChangelog writes images/<name>/changelog-TAG.md: the lock diff
// against the previous release's lock, read from its signed lock attestation
// (the lock in git may have moved since).
func (r *Real) writeChangelog(ctx context.Context, l *lock.Lock, tag string, prev *releasefile.Release) (string, error) {
	var old *lock.Lock
	if prev != nil {
		var err error
		if old, err = r.releasedLock(ctx, prev); err != nil {
			return "", err
		}
	}
	b, err := promote.Changelog(tag, r.cfg.Month, l, prev, old)
	if err != nil {
		return "", err
	}
	path := filepath.Join(r.cfg.ImagesDir, l.Name, "changelog-"+tag+".md")
	return path, atomicfile.Write(path, b, 0o644)
}

func (r *Real) releasedLock(ctx context.Context, rel *releasefile.Release) (*lock.Lock, error) {
	d, err := rel.Digest()
	if err != nil {
		return nil, err
	}
	preds, err := sign.VerifyAttestations(ctx, d, sign.LockPredicateType, r.cfg.PublicKey, r.signOpts(r.cfg.SignOptions)...)
	if err != nil {
		return nil, fmt.Errorf("reading the lock of the previous release %s: %w", d, err)
	}
	return lock.Parse(d.String(), preds[len(preds)-1])
}

// attestSupport signs the release's support window (the spec's policy
// support_months from the release month) on d, before promotion copies
// d's attestations to the release repository, and records its end in rel.
// An image without a window gets neither.
func (r *Real) attestSupport(ctx context.Context, l *lock.Lock, d name.Digest, rel *releasefile.Release) error {
	months := r.cfg.SupportMonths[l.Name]
	if months == 0 {
		return nil
	}
	s, err := discover.NewSupport(rel.Month, months)
	if err != nil {
		return fmt.Errorf("support window of %s: %w", l.Name, err)
	}
	pred, err := s.Predicate()
	if err != nil {
		return err
	}
	if err := sign.Attest(ctx, d, discover.SupportPredicateType, pred, r.signOpts(r.cfg.SignOptions)...); err != nil {
		return fmt.Errorf("attesting the support window of %s: %w", d, err)
	}
	rel.SupportEnd = s.End
	return nil
}
