// Package promote moves verified image digests from a staging repository to
// a release repository, declaratively: a release file in git says which
// digest carries which release tags, and Run reconciles the registry to it
// after every digest has passed the gates (signed by a trusted key, a
// passing verification attestation for exactly that digest by a trusted
// verifier key, the lock attestation equal to the lock in git).
package promote

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/releasefile"
)

// ActionKind is what one step of a promotion does.
type ActionKind string

const (
	// CopyImage copies the image (manifest and blobs, blobs by
	// cross-repository mount) to the release repository by digest.
	CopyImage ActionKind = "copy-image"
	// CopyAttachment copies a .sig or .att tag along.
	CopyAttachment ActionKind = "copy-attachment"
	// SetTag points a release or moving tag at a digest; always last.
	SetTag ActionKind = "set-tag"
)

// Action is one step of the plan.
type Action struct {
	Kind ActionKind `json:"kind"`
	// Target is the reference written: repo@sha256:..., repo:tag.
	Target string `json:"target"`
	// Digest is the manifest digest the target gets.
	Digest string `json:"digest"`
	// From is the current digest of a tag being moved; empty for a new one.
	From string `json:"from,omitempty"`
	// Done is true when Run performed the action (false in a dry run).
	Done bool `json:"done"`
}

// Result is what Run did or, in a dry run, would do.
type Result struct {
	Image      string `json:"image"`
	Repository string `json:"repository"`
	DryRun     bool   `json:"dry_run"`
	// Actions are in execution order: every copy before any tag.
	Actions []Action `json:"actions"`
	// InSync lists the releases that needed nothing (not gated again).
	InSync []string `json:"in_sync"`
	// Gated lists the releases that needed something and were gated.
	Gated []string `json:"gated"`
}

// Run reconciles the release repository named in the release file to it.
// Each release whose image, signatures, attestations or tags are not yet in
// place must pass every gate; if any gate refuses any release, Run returns
// a *RefusedError and writes nothing. With WithConfirm(true) it then
// copies every image by digest (blobs mounted, not uploaded, within one
// registry), copies the .sig and .att tags along, and sets tags last, so
// that no tag ever points at a partly copied image. Tags absent from the
// file are left alone: old releases stay. Run is idempotent: a second run
// has no actions; a run interrupted at any point completes when run again.
func Run(ctx context.Context, releaseFile string, opts ...Option) (*Result, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	f, err := releasefile.ReadFile(releaseFile)
	if err != nil {
		return nil, err
	}
	lockPath := o.lockPath
	if lockPath == "" {
		lockPath = filepath.Join(filepath.Dir(releaseFile), lock.FileName)
	}
	return o.run(ctx, f, lockPath)
}

// Reconcile is Run on a release file held in memory, such as the file in
// git plus a release not recorded yet (releasefile.File.Add): the caller writes the
// file only once Reconcile succeeded, so a refused or failed promotion
// leaves the file in git as it was. The lock in git is WithLockFile's,
// which Reconcile requires.
func Reconcile(ctx context.Context, f *releasefile.File, opts ...Option) (*Result, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	if o.lockPath == "" {
		return nil, errors.New("promote.Reconcile: no lock file (WithLockFile)")
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("release file of %s: %w", f.Image, err)
	}
	return o.run(ctx, f, o.lockPath)
}

func (o *options) run(ctx context.Context, f *releasefile.File, lockPath string) (*Result, error) {
	l, err := lock.Read(lockPath)
	if err != nil {
		return nil, err
	}
	repo, err := name.NewRepository(f.Repository, name.StrictValidation)
	if err != nil {
		return nil, err
	}
	log := logs.From(ctx)
	res := &Result{Image: f.Image, Repository: repo.Name(), DryRun: !o.confirm}

	var refusals []Refusal
	var copies, tags []Action
	byDigest := map[string]name.Digest{}
	byRelease := map[string]releasefile.Release{}
	childOf := map[string]name.Digest{}
	for _, r := range f.Releases {
		src, err := r.Digest()
		if err != nil {
			refusals = append(refusals, Refusal{Source: r.Source, Gate: GateDigest, Reason: "the source is not a digest reference (repo@sha256:...); tags move, digests do not"})
			continue
		}
		byDigest[src.DigestStr()] = src
		byRelease[src.DigestStr()] = r
		children, err := indexChildren(src, o.remoteOptions(ctx))
		if err != nil {
			return nil, o.classify(fmt.Errorf("reading %s: %w", src, err))
		}
		for _, c := range children {
			childOf[c.DigestStr()] = c // where the children's attachments come from
		}
		rc, rt, rr, err := o.plan(ctx, repo, src, r.Tags, true)
		if err != nil {
			return nil, err
		}
		refusals = append(refusals, rr...)
		if len(rc)+len(rt) == 0 {
			res.InSync = append(res.InSync, src.String())
			continue
		}
		log.Debug("checking gates", "source", src.String())
		rr, err = o.checkGates(ctx, src, releaseLock(r, l, lockPath))
		if err != nil {
			return nil, err
		}
		refusals = append(refusals, rr...)
		res.Gated = append(res.Gated, src.String())
		copies = append(copies, rc...)
		tags = append(tags, rt...)
	}
	// Moving tags, in a stable order; their digest's release was gated above
	// if it needed anything, and is gated here if only the moving tag does.
	moving := make([]string, 0, len(f.Moving))
	for t := range f.Moving {
		moving = append(moving, t)
	}
	sort.Strings(moving)
	gated := map[string]bool{}
	for _, a := range copies {
		gated[a.Digest] = true
	}
	for _, a := range tags {
		gated[a.Digest] = true
	}
	for _, t := range moving {
		src, ok := byDigest[f.Moving[t]]
		if !ok {
			continue // its release was refused by the digest gate
		}
		_, rt, _, err := o.plan(ctx, repo, src, []string{t}, false)
		if err != nil {
			return nil, err
		}
		if len(rt) > 0 && !gated[src.DigestStr()] {
			rr, err := o.checkGates(ctx, src, releaseLock(byRelease[src.DigestStr()], l, lockPath))
			if err != nil {
				return nil, err
			}
			refusals = append(refusals, rr...)
			gated[src.DigestStr()] = true
			res.Gated = append(res.Gated, src.String())
		}
		tags = append(tags, rt...)
	}
	res.Actions = append(copies, tags...)
	if res.Actions == nil {
		res.Actions = []Action{}
	}
	if res.InSync == nil {
		res.InSync = []string{}
	}
	if res.Gated == nil {
		res.Gated = []string{}
	}
	if len(refusals) > 0 {
		return res, &RefusedError{Refusals: refusals}
	}
	if !o.confirm {
		return res, nil
	}
	sources := maps.Clone(byDigest)
	maps.Copy(sources, childOf)
	for i := range res.Actions {
		a := &res.Actions[i]
		if err := o.do(ctx, a, sources); err != nil {
			return res, o.classify(fmt.Errorf("promoting %s: %s %s: %w", f.Image, a.Kind, a.Target, err))
		}
		a.Done = true
		log.Info("promoted", "action", string(a.Kind), "target", a.Target, "digest", a.Digest)
	}
	return res, nil
}

// plan returns the copies and tag moves that put src with tags into repo,
// and refusals for immutable tags that point elsewhere.
func (o *options) plan(ctx context.Context, repo name.Repository, src name.Digest, tags []string, immutable bool) (copies, sets []Action, refusals []Refusal, err error) {
	ro := o.remoteOptions(ctx)
	dst := repo.Digest(src.DigestStr())
	if _, err := head(dst, ro); errors.Is(err, errNotFound) {
		copies = append(copies, Action{Kind: CopyImage, Target: dst.String(), Digest: src.DigestStr()})
	} else if err != nil {
		return nil, nil, nil, o.classify(fmt.Errorf("checking %s: %w", dst, err))
	}
	// An image index brings its children's signatures and attestations
	// (each platform's image is signed and verified by its own digest).
	children, err := indexChildren(src, ro)
	if err != nil {
		return nil, nil, nil, o.classify(fmt.Errorf("reading %s: %w", src, err))
	}
	var atts []name.Tag
	for _, d := range append([]name.Digest{src}, children...) {
		atts = append(atts, attachmentTags(d)...)
	}
	for _, st := range atts {
		sd, err := head(st, ro)
		if errors.Is(err, errNotFound) {
			continue // the gates refuse a digest without them
		} else if err != nil {
			return nil, nil, nil, o.classify(fmt.Errorf("checking %s: %w", st, err))
		}
		dt := repo.Tag(st.TagStr())
		dd, err := head(dt, ro)
		if err != nil && !errors.Is(err, errNotFound) {
			return nil, nil, nil, o.classify(fmt.Errorf("checking %s: %w", dt, err))
		}
		if dd != sd {
			copies = append(copies, Action{Kind: CopyAttachment, Target: dt.String(), Digest: sd, From: dd})
		}
	}
	for _, t := range tags {
		tag := repo.Tag(t)
		cur, err := head(tag, ro)
		if err != nil && !errors.Is(err, errNotFound) {
			return nil, nil, nil, o.classify(fmt.Errorf("checking %s: %w", tag, err))
		}
		if cur == src.DigestStr() {
			continue
		}
		if cur != "" && immutable {
			refusals = append(refusals, Refusal{Source: src.String(), Gate: GateImmutableTag,
				Reason: fmt.Sprintf("release tag %s already points at %s; release tags never move (use a new tag)", tag, cur)})
			continue
		}
		sets = append(sets, Action{Kind: SetTag, Target: tag.String(), Digest: src.DigestStr(), From: cur})
	}
	return copies, sets, refusals, nil
}

// do performs one action.
func (o *options) do(ctx context.Context, a *Action, byDigest map[string]name.Digest) error {
	ro := o.remoteOptions(ctx)
	switch a.Kind {
	case CopyImage:
		dst, err := name.NewDigest(a.Target, name.StrictValidation)
		if err != nil {
			return err
		}
		return copyManifest(byDigest[a.Digest], dst, ro)
	case CopyAttachment:
		dst, err := name.NewTag(a.Target, name.StrictValidation)
		if err != nil {
			return err
		}
		src, err := findAttachment(dst, byDigest)
		if err != nil {
			return err
		}
		return copyManifest(src, dst, ro)
	case SetTag:
		dst, err := name.NewTag(a.Target, name.StrictValidation)
		if err != nil {
			return err
		}
		// The manifest is already in the release repository by digest
		// (copied above or earlier): tag it from there.
		desc, err := remote.Get(dst.Context().Digest(a.Digest), ro...)
		if err != nil {
			return err
		}
		return remote.Tag(dst, desc, ro...)
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

// indexChildren lists the images of src when it is an image index (nil for
// an image), as digests in src's repository.
func indexChildren(src name.Digest, ro []remote.Option) ([]name.Digest, error) {
	desc, err := remote.Get(src, ro...)
	if err != nil {
		if auth.NotFound(err) {
			return nil, nil // the gates refuse a digest that is not there
		}
		return nil, err
	}
	if !desc.MediaType.IsIndex() {
		return nil, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var ds []name.Digest
	for _, m := range im.Manifests {
		ds = append(ds, src.Context().Digest(m.Digest.String()))
	}
	return ds, nil
}

// findAttachment returns the source .sig/.att tag for a destination one.
func findAttachment(dst name.Tag, byDigest map[string]name.Digest) (name.Reference, error) {
	for _, src := range byDigest {
		for _, st := range attachmentTags(src) {
			if st.TagStr() == dst.TagStr() {
				return st, nil
			}
		}
	}
	return nil, fmt.Errorf("no source for %s", dst)
}

// copyManifest copies the image or index at src to dst: blobs first (ggcr
// mounts them from src's repository when both are on one registry), the
// manifest last.
func copyManifest(src, dst name.Reference, ro []remote.Option) error {
	desc, err := remote.Get(src, ro...)
	if err != nil {
		return err
	}
	// ggcr copies an index with its children, or an image with its blobs,
	// skipping what dst already has (remote.Push of a Descriptor).
	return remote.Push(dst, desc, ro...)
}

// attachmentTags are cosign's tags for src's signatures and attestations
// in src's repository (sha256-<hex>.sig and .att), as cosign's ociremote
// computes them.
func attachmentTags(src name.Digest) []name.Tag {
	// For a digest neither helper touches the registry, so they cannot fail.
	sig, _ := ociremote.SignatureTag(src)
	att, _ := ociremote.AttestationTag(src)
	return []name.Tag{sig, att}
}

var errNotFound = errors.New("not found")

// classify gives a registry that refused the credentials its exit code
// (77, naming the registry and the credentials tried) and an unreachable
// registry its own (69).
func (o *options) classify(err error) error {
	if ae := o.denied(err); ae != nil {
		return ae
	}
	if unreachable(err) {
		return exitcode.Wrap(exitcode.Unavailable, err)
	}
	return err
}

// head returns ref's manifest digest, or errNotFound.
func head(ref name.Reference, ro []remote.Option) (string, error) {
	d, err := remote.Head(ref, ro...)
	if err != nil {
		if auth.NotFound(err) {
			return "", errNotFound
		}
		return "", err
	}
	return d.Digest.String(), nil
}

// RunAll runs Run for every images/<name>/releases.json under dir, in name
// order. Each release file is gated on its own: a refusal in one stops
// nothing in another. The error joins every file's error.
func RunAll(ctx context.Context, dir string, opts ...Option) ([]*Result, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*", releasefile.FileName))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no release files (%s) under %s", filepath.Join("*", releasefile.FileName), dir)
	}
	sort.Strings(paths)
	var results []*Result
	var errs []error
	for _, p := range paths {
		res, err := Run(ctx, p, opts...)
		if res != nil {
			results = append(results, res)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return results, errors.Join(errs...)
}
