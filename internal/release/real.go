package release

import (
	"context"
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

	"imagectl/internal/auth"
	"imagectl/internal/build"
	"imagectl/internal/compat"
	"imagectl/internal/lock"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/logs"
	"imagectl/internal/mirror"
	"imagectl/internal/releasefile"
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
	// LockOptions are passed to resolve.Image when LockMissing applies.
	LockOptions []resolve.Option
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
	// BuildOptions (resolve.WithAccess, build.WithAccess).
	Access *auth.Access
	// RemoteOptions are further options for every registry call, after
	// Access's keychain and transport.
	RemoteOptions []remote.Option
	// VulnDB, when set, is the vulnerability database (scan.OpenDB: a path
	// or an OCI reference) each image is scanned against in the scan stage,
	// before promotion; the result is signed with SignOptions (scan.go).
	// The default is no scan stage.
	VulnDB string
	// ScanOptions are passed to scan.OpenDB and scan.Image (age limit,
	// cache directory).
	ScanOptions []scan.Option
	// VulnPolicies are the images whose policy.vulnerabilities gates their
	// promotion (promote.WithVulnerabilityPolicies).
	VulnPolicies []spec.Image
	// SupportMonths are the images' support windows (spec policy
	// support_months) by image name: promotion signs a support attestation
	// and records the end date (promote.go). The default is none.
	SupportMonths map[string]int
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
	return filepath.Join(r.cfg.ImagesDir, image, releasefile.FileName)
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
		if l, err = resolve.Image(ctx, img, r.cfg.LockOptions...); err != nil {
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
	if err := resolve.Check(ctx, img, l); err != nil {
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
func (r *Real) releases(image string) (*releasefile.File, error) {
	f, err := releasefile.ReadFile(r.releasePath(image))
	if errors.Is(err, fs.ErrNotExist) {
		return &releasefile.File{}, nil
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
