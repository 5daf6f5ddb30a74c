package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/buildkit/client"

	"imagectl/internal/atomicfile"
	"imagectl/internal/auth"
	"imagectl/internal/build"
	"imagectl/internal/compat"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/mirror"
	"imagectl/internal/promote"
	"imagectl/internal/scan"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
	"imagectl/internal/verify"
)

// Config configures the real stages.
type Config struct {
	// ImagesDir holds images/<name>/lock.json and releases.json.
	ImagesDir string
	// LockMissing resolves and writes a lock that does not exist yet instead
	// of failing the lock stage.
	LockMissing bool
	// LockOptions are passed to lock.Resolve when LockMissing applies.
	LockOptions []lock.Option
	// MirrorOptions are passed to mirror.Run, which copies the base of an
	// image with repos.mirror before its missing lock is resolved.
	MirrorOptions []mirror.Option
	// Buildkit is the client builds are solved with.
	Buildkit build.Client
	// BuildOptions are passed to every build.Solve (init path, caches, ...).
	BuildOptions []build.Option
	// BuildStatus, when set, returns a channel for one image's build
	// progress and a function that waits until it has been rendered.
	BuildStatus func(image string) (chan *client.SolveStatus, func())
	// Builder describes the build for the provenance attestation.
	Builder sign.Builder
	// SignOptions carry the signing key.
	SignOptions []sign.Option
	// PublicKey is the signing key's public half (cosign.pub).
	PublicKey string
	// VerifierSignOptions carry the verifier's key for the result attestation.
	VerifierSignOptions []sign.Option
	// VerifierPublicKey is the verifier key's public half.
	VerifierPublicKey string
	// VerifyRuntime returns the runtime that runs one image's probes
	// (SelectVerifyRuntime).
	VerifyRuntime VerifyRuntime
	// RequireContainerRuntime makes promotion accept only verifications run
	// in a container started from the digest
	// (promote.WithRequireContainerRuntime).
	RequireContainerRuntime bool
	// SkipPlatforms are platforms ("linux/arm64") whose image inside a
	// multi-platform image's index may be promoted without a passing
	// verification of its own (promote.WithSkipPlatforms). The verify stage
	// runs the image of this host's platform (verify.HostPlatform) and
	// reports the others as not verified. The default is none: promotion
	// then needs every platform verified.
	SkipPlatforms []string
	// VerifyOptions are passed to every verify.Run.
	VerifyOptions []verify.Option
	// Month is the release month, YYYY-MM; release tags are NAME-YYYY.MM and
	// the moving NAME.
	Month string
	// Access gives every stage its registry and index credentials and TLS
	// trust (nil is auth.Default()); pass the same to LockOptions and
	// BuildOptions (lock.WithAccess, build.WithAccess).
	Access *auth.Access
	// RemoteOptions are further options for every registry call, after
	// Access's keychain and transport.
	RemoteOptions []remote.Option
	// VulnDB, when set, is the vulnerability database (scan.OpenDB: a path
	// or an OCI reference) each image is scanned against before promotion;
	// the result is signed with SignOptions (scan.go). The default is no
	// scan.
	VulnDB string
	// ScanOptions are passed to scan.OpenDB and scan.Image (age limit,
	// cache directory).
	ScanOptions []scan.Option
	// VulnPolicies are the images whose policy.vulnerabilities gates their
	// promotion (promote.WithVulnerabilityPolicies).
	VulnPolicies []spec.Image
}

// Real is the pipeline's stages over the lock, build, sign, verify and
// promote packages.
type Real struct {
	cfg Config
}

// NewReal returns the real stages.
func NewReal(cfg Config) (*Real, error) {
	switch {
	case cfg.ImagesDir == "":
		return nil, errors.New("release: no images directory")
	case cfg.Buildkit == nil:
		return nil, errors.New("release: no BuildKit client")
	case cfg.PublicKey == "" || cfg.VerifierPublicKey == "":
		return nil, errors.New("release: the signing and verifier public keys are required: promotion checks both")
	case cfg.VerifyRuntime == nil:
		return nil, errors.New("release: no verify runtime")
	}
	if cfg.Access == nil {
		cfg.Access = auth.Default()
	}
	if cfg.Month == "" {
		cfg.Month = time.Now().UTC().Format("2006-01")
	}
	if _, err := time.Parse("2006-01", cfg.Month); err != nil {
		return nil, fmt.Errorf("release month %q: want YYYY-MM", cfg.Month)
	}
	for _, p := range cfg.SkipPlatforms {
		if !slices.Contains(compat.Platforms, p) {
			return nil, fmt.Errorf("skip platform %q: not a platform images are built for (%s)", p, strings.Join(compat.Platforms, ", "))
		}
	}
	return &Real{cfg: cfg}, nil
}

func (r *Real) lockPath(image string) string { return lock.Path(r.cfg.ImagesDir, image) }
func (r *Real) releasePath(image string) string {
	return filepath.Join(r.cfg.ImagesDir, image, promote.FileName)
}

// Lock implements Stages: the lock in the images directory, checked against
// the spec offline; with LockMissing, a missing lock is resolved first (after
// mirroring the base when the spec has repos.mirror: the lock resolves the
// base there).
func (r *Real) Lock(ctx context.Context, img spec.Image) (*lock.Lock, error) {
	path := r.lockPath(img.Name)
	l, err := lock.Read(path)
	if errors.Is(err, fs.ErrNotExist) && r.cfg.LockMissing {
		if img.Repos.Mirror != "" {
			if _, err := mirror.Run(ctx, []spec.Image{img}, append([]mirror.Option{mirror.WithAccess(r.cfg.Access)}, r.cfg.MirrorOptions...)...); err != nil {
				return nil, err
			}
		}
		if l, err = lock.Resolve(ctx, img, r.cfg.LockOptions...); err != nil {
			return nil, err
		}
		if err := lock.Write(path, l); err != nil {
			return nil, err
		}
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if err := lock.Check(ctx, img, l); err != nil {
		return nil, err
	}
	return l, nil
}

// Build implements Stages: build and push to the staging repository, and
// compare the layers with the previous release's.
func (r *Real) Build(ctx context.Context, l *lock.Lock) (Built, error) {
	opts := append([]build.Option{build.WithPush(true)}, r.cfg.BuildOptions...)
	wait := func() {}
	if r.cfg.BuildStatus != nil {
		var ch chan *client.SolveStatus
		ch, wait = r.cfg.BuildStatus(l.Name)
		opts = append(opts, build.WithStatus(ch))
	}
	res, err := build.Solve(ctx, r.cfg.Buildkit, l, opts...)
	wait()
	if err != nil {
		return Built{}, err
	}
	d, err := name.NewDigest(res.Ref, name.StrictValidation)
	if err != nil {
		return Built{}, fmt.Errorf("build returned %q, not a digest reference: %w", res.Ref, err)
	}
	b := Built{Digest: d, Size: res.Size, Layers: len(res.Layers)}
	for _, p := range res.Platforms {
		pd, err := name.NewDigest(d.Context().Name()+"@"+p.Digest, name.StrictValidation)
		if err != nil {
			return Built{}, fmt.Errorf("build returned the %s image %q, not a digest: %w", p.Platform, p.Digest, err)
		}
		b.Platforms = append(b.Platforms, PlatformBuilt{Platform: p.Platform, Digest: pd, Size: p.Size, Layers: len(p.Layers)})
		b.Layers += len(p.Layers)
	}
	f, err := r.releases(l.Name)
	if err != nil {
		return Built{}, err
	}
	prev := f.Previous(d)
	if prev == nil {
		return b, nil
	}
	pd, err := prev.Digest()
	if err != nil {
		return Built{}, err
	}
	seen, err := build.PublishedLayers(ctx, pd, r.remoteOptions(ctx)...)
	if err != nil {
		return Built{}, r.cfg.Access.Classify(fmt.Errorf("reading the previous release %s: %w", pd, err))
	}
	b.Previous = prev.Source
	if len(res.Platforms) == 0 {
		// A single-platform image is compared with the previous release's
		// image of its platform (the previous release may be an index).
		c := seen.Changed(l.Base.Platform, res.Layers)
		b.ChangedLayers, b.ChangedBytes = c.Layers, c.Bytes
		return b, nil
	}
	// Each platform's image is compared with the previous release's image
	// of the same platform; a platform the previous release did not have
	// is all new.
	for i, p := range res.Platforms {
		c := seen.Changed(p.Platform, p.Layers)
		b.Platforms[i].ChangedLayers, b.Platforms[i].ChangedBytes = c.Layers, c.Bytes
		b.ChangedLayers += c.Layers
		b.ChangedBytes += c.Bytes
	}
	return b, nil
}

// releases reads the image's release file; a missing file is an empty one.
func (r *Real) releases(image string) (*promote.File, error) {
	f, err := promote.ReadFile(r.releasePath(image))
	if errors.Is(err, fs.ErrNotExist) {
		return &promote.File{}, nil
	}
	return f, err
}

// Signed implements Stages: d (of an image index, also each platform's
// image) carries a signature and every build attestation of
// sign.ReleaseAttestations by the signing key, each verified, the lock
// attestation holding exactly l. A registry that does not answer is an
// error, never "not signed": signing again would not help.
func (r *Real) Signed(ctx context.Context, l *lock.Lock, d name.Digest) (bool, error) {
	missing, err := sign.Missing(ctx, d, l, r.cfg.PublicKey, r.signOpts(r.cfg.SignOptions)...)
	if err != nil {
		return false, fmt.Errorf("checking what %s already carries: %w", d, err)
	}
	if len(missing) > 0 {
		logs.From(ctx).Debug("signing", "image", d.String(), "missing", strings.Join(missing, ", "))
	}
	return len(missing) == 0, nil
}

// Sign implements Stages: SignAndAttest writes only what d lacks.
func (r *Real) Sign(ctx context.Context, l *lock.Lock, d name.Digest) error {
	return sign.SignAndAttest(ctx, d, l, r.cfg.Builder, r.signOpts(r.cfg.SignOptions)...)
}

// Verified implements Stages: a passing result for exactly d (of an image
// index, for the image of this host's platform inside it) and l, signed by
// the verifier key, with every other attestation the verifier key writes
// (sign.Required(sign.VerifierKey, false)). Only "none there" means not
// verified; a registry that does not answer is an error.
func (r *Real) Verified(ctx context.Context, l *lock.Lock, d name.Digest) (*verify.Result, error) {
	img, _, _, err := r.target(ctx, l, d)
	if err != nil {
		return nil, err
	}
	preds, err := sign.Attestations(ctx, img, r.cfg.VerifierPublicKey, r.signOpts(r.cfg.VerifierSignOptions)...)
	if err != nil {
		// Not "not verified": verifying again would run minutes of GPU
		// work for an answer the registry only failed to give.
		return nil, fmt.Errorf("checking for a verification of %s: %w", img, err)
	}
	found := sign.Found{Ref: img, Predicates: preds}
	if len(found.Lacks(sign.Required(sign.VerifierKey, false), nil)) > 0 {
		return nil, nil
	}
	for _, p := range preds[sign.VerificationPredicateType] {
		var res verify.Result
		if json.Unmarshal(p, &res) != nil {
			continue
		}
		if res.Passed && res.Digest == img.DigestStr() && res.LockDigest == l.Digest {
			return &res, nil
		}
	}
	return nil, nil
}

// Verify implements Stages: run the checks, then attach the result, passing
// or not, signed by the verifier key. Of an image index it verifies the
// image of this host's platform, with that platform's view of the lock, and
// the result (attached to that image) lists the other platforms as not
// verified: promotion then needs them verified elsewhere or named in
// SkipPlatforms.
func (r *Real) Verify(ctx context.Context, l *lock.Lock, d name.Digest) (*verify.Result, error) {
	// The runtime pulls the image itself: a registry that refuses the
	// credentials is said here, by name, instead of as a failed probe.
	if _, err := remote.Head(d, r.remoteOptions(ctx)...); err != nil {
		return nil, r.cfg.Access.Classify(fmt.Errorf("reading %s before verifying it: %w", d, err))
	}
	img, vl, opts, err := r.target(ctx, l, d)
	if err != nil {
		return nil, err
	}
	rt, err := r.cfg.VerifyRuntime(vl, img)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	opts = append(append(opts, verify.WithRuntime(rt)), r.cfg.VerifyOptions...)
	res, runErr := verify.Run(ctx, vl, opts...)
	if res == nil {
		return nil, runErr
	}
	if err := verify.Attest(ctx, img, res, r.signOpts(r.cfg.VerifierSignOptions)...); err != nil {
		return res, errors.Join(runErr, fmt.Errorf("attaching the verification result: %w", err))
	}
	return res, runErr
}

// target is what the verify stage runs for d built from l: d itself with
// l, or, when l has several platforms (d is their image index), the image
// of this host's platform with its view of the lock (verify.ForHost); with
// the verify options that bind the result to it.
func (r *Real) target(ctx context.Context, l *lock.Lock, d name.Digest) (name.Digest, *lock.Lock, []verify.Option, error) {
	sub, err := verify.SubjectOf(ctx, d, l, r.cfg.Access)
	if err != nil {
		return name.Digest{}, nil, nil, r.cfg.Access.Classify(err)
	}
	return sub.Image, sub.Lock, sub.Options(), nil
}

// Promote implements Stages: reconcile the release repository to the
// release file plus d's release, write the file (atomically, only once the
// registry holds the release: tags moved last), and write the month's
// changelog. It holds no lock across registry calls: each image has a
// release file of its own.
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
	tag := promote.NextTag(f, l.Name, r.cfg.Month, d)
	rel := promote.Release{Source: d.String(), Tags: []string{tag}, Month: r.cfg.Month, LockDigest: l.Digest}
	if err := r.scanAndAttest(ctx, l, d); err != nil { // scan.go
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
	// Re-read before writing: what another process recorded meanwhile stays.
	if f, err = r.releases(l.Name); err != nil {
		return Promoted{}, err
	}
	if next, err = r.withRelease(f, l, rel); err != nil {
		return Promoted{}, err
	}
	if err := promote.WriteFile(relPath, next); err != nil {
		return Promoted{}, fmt.Errorf("recording the release in %s: %w", relPath, err)
	}
	p := Promoted{Reference: l.Repos.Release + "@" + d.DigestStr(), Tags: append(rel.Tags, l.Name)}
	p.Changelog, err = r.writeChangelog(ctx, l, tag, prev)
	return p, err
}

// withRelease is f with rel added and the moving tag NAME on it, in the
// lock's release repository.
func (r *Real) withRelease(f *promote.File, l *lock.Lock, rel promote.Release) (*promote.File, error) {
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
func (r *Real) writeChangelog(ctx context.Context, l *lock.Lock, tag string, prev *promote.Release) (string, error) {
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

func (r *Real) releasedLock(ctx context.Context, rel *promote.Release) (*lock.Lock, error) {
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

func (r *Real) signOpts(base []sign.Option) []sign.Option {
	opts := append(append([]sign.Option(nil), base...), sign.WithAccess(r.cfg.Access))
	if len(r.cfg.RemoteOptions) == 0 {
		return opts
	}
	return append(opts, sign.WithRemoteOptions(r.cfg.RemoteOptions...))
}

func (r *Real) remoteOptions(ctx context.Context) []remote.Option {
	ro := append(r.cfg.Access.RemoteOptions(), r.cfg.RemoteOptions...)
	return append(ro, remote.WithContext(ctx))
}

// ensure Real satisfies Stages.
var _ Stages = (*Real)(nil)
