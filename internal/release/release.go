// Package release runs the whole pipeline for each concrete image: lock check,
// build, sign and attest, verify, scan (with a vulnerability database),
// promote. Each image stops at its first failing stage; the others go on. A
// re-run skips what is already done: BuildKit's cache makes the build a
// no-op, and images already signed or verified are not signed or verified
// again.
package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/errgroup"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/spec"
	"imagectl/internal/verify"
)

// Stage names, in pipeline order.
const (
	StageLock    = "lock"
	StageBuild   = "build"
	StageSign    = "sign"
	StageVerify  = "verify"
	StageScan    = "scan"
	StagePromote = "promote"
)

// Stages are the pipeline's steps for one image. The real implementation
// (Real) calls the lock, build, sign, verify, scan and promote packages;
// tests use fakes.
type Stages interface {
	// Lock returns the image's lock, checked against the spec.
	Lock(ctx context.Context, img spec.Image) (*lock.Lock, error)
	// Build builds the lock and pushes it to the staging repository.
	Build(ctx context.Context, l *lock.Lock) (Built, error)
	// Signed reports whether d already carries our signature and every
	// build attestation (sign.ReleaseAttestations), each verified. Only
	// "not there" is false; any other failure is an error.
	Signed(ctx context.Context, l *lock.Lock, d name.Digest) (bool, error)
	// Sign signs d and attaches the lock, SBOM and provenance attestations.
	Sign(ctx context.Context, l *lock.Lock, d name.Digest) error
	// Verified returns a passing, signed verification result for d, if one
	// exists; nil only when none is there (any other failure is an error).
	Verified(ctx context.Context, l *lock.Lock, d name.Digest) (*verify.Result, error)
	// Verify verifies d and attaches the signed result.
	Verify(ctx context.Context, l *lock.Lock, d name.Digest) (*verify.Result, error)
	// Scans reports whether the scan stage runs: whether a vulnerability
	// database was given.
	Scans() bool
	// Scan matches d's signed SBOMs against the vulnerability database and
	// signs each result as a vuln attestation, which promotion's
	// vulnerabilities gate reads. It is never resumed: a re-run scans
	// again, with the database it is given.
	Scan(ctx context.Context, l *lock.Lock, d name.Digest) error
	// Promote records d in the release file and reconciles the release repository.
	Promote(ctx context.Context, l *lock.Lock, d name.Digest) (Promoted, error)
}

// Built describes a pushed image.
type Built struct {
	Digest name.Digest
	Size   int64
	// ChangedLayers and ChangedBytes compare the image's layers with the
	// previous release's; both are zero for a first release.
	ChangedLayers int
	ChangedBytes  int64
	Layers        int
	// Previous is the digest of the previous release compared against;
	// empty for a first release.
	Previous string
	// Platforms are the images of a multi-platform build (Digest is then
	// their image index), each compared with the previous release's image
	// of the same platform; Layers, ChangedLayers and ChangedBytes above
	// are their sums. Nil for a single-platform image.
	Platforms []PlatformBuilt
}

// PlatformBuilt is one platform's image inside a built image index.
type PlatformBuilt struct {
	// Platform is "linux/arm64".
	Platform string
	Digest   name.Digest
	Size     int64
	Layers   int
	// ChangedLayers and ChangedBytes compare the image's layers with the
	// previous release's image of the same platform (all of them when it
	// had none).
	ChangedLayers int
	ChangedBytes  int64
}

// Promoted describes a promotion.
type Promoted struct {
	// Reference is what users pin: release-repo@sha256:...
	Reference string   `json:"reference,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	// Changelog is the path of the changelog written next to the release record.
	Changelog string `json:"changelog,omitempty"`
}

// Outcome is what happened to one image; its JSON is a row of imagectl
// release -o json (MarshalJSON adds the error and the seconds per stage).
type Outcome struct {
	Image string `json:"image"`
	// Ref is the built image in the staging repository, repo@sha256:...
	Ref      string         `json:"ref,omitempty"`
	Digest   string         `json:"digest,omitempty"`
	Previous string         `json:"previous,omitempty"`
	Size     int64          `json:"size,omitempty"`
	Layers   int            `json:"layers,omitempty"`
	Changed  int            `json:"changed_layers"`
	Delta    int64          `json:"delta_bytes"`
	Result   *verify.Result `json:"verify,omitempty"`
	// Platforms are the images of a multi-platform image, with what the
	// verify stage found for each; nil for a single-platform image.
	Platforms []PlatformOutcome `json:"platforms,omitempty"`
	// Promoted is the promotion; its fields are the row's.
	Promoted
	// Done lists the stages that ran or were found already done, in order.
	Done []string `json:"-"`
	// Resumed lists stages skipped because their result already existed.
	Resumed []string `json:"resumed,omitempty"`
	// FailedStage is the stage that stopped the image; empty on success.
	FailedStage string                   `json:"failed_stage,omitempty"`
	Err         error                    `json:"-"`
	Durations   map[string]time.Duration `json:"-"`
}

// MarshalJSON writes oc with Err as "error" (its message) and Durations
// as "seconds" per stage.
func (oc Outcome) MarshalJSON() ([]byte, error) {
	type fields Outcome // without this method
	row := struct {
		fields
		Error   string             `json:"error,omitempty"`
		Seconds map[string]float64 `json:"seconds"`
	}{fields: fields(oc), Seconds: map[string]float64{}}
	if oc.Err != nil {
		row.Error = oc.Err.Error()
	}
	for s, d := range oc.Durations {
		row.Seconds[s] = d.Seconds()
	}
	return json.Marshal(row)
}

// PlatformOutcome is one platform's image of a multi-platform image.
type PlatformOutcome struct {
	Platform string `json:"platform"`
	// Digest is the image inside the index, sha256:...
	Digest  string `json:"digest"`
	Size    int64  `json:"size"`
	Layers  int    `json:"layers"`
	Changed int    `json:"changed_layers"`
	Delta   int64  `json:"delta_bytes"`
	// Verify is verify.PlatformVerified or verify.PlatformFailed for the
	// platform verified on this host, verify.PlatformNotVerified for the
	// others; empty before the verify stage ran.
	Verify string `json:"verify,omitempty"`
}

// StageError says which stage stopped an image.
type StageError struct {
	Image string
	Stage string
	Err   error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Image, e.Stage, e.Err)
}
func (e *StageError) Unwrap() error { return e.Err }

// Option configures Run.
type Option func(*options) error

type options struct {
	jobs     int
	promote  bool
	progress func(Event)
}

// WithJobs sets how many images run at once. The default is 1.
func WithJobs(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("jobs must be at least 1, got %d", n)
		}
		o.jobs = n
		return nil
	}
}

// WithPromote turns the promote stage on or off. The default is on.
func WithPromote(on bool) Option {
	return func(o *options) error { o.promote = on; return nil }
}

// WithProgress receives an Event when a stage starts or ends. The default
// discards them. The function may be called from several goroutines.
func WithProgress(f func(Event)) Option {
	return func(o *options) error { o.progress = f; return nil }
}

// Event reports a stage starting (Err nil, End zero) or ending.
type Event struct {
	Image   string
	Stage   string
	Start   bool
	Resumed bool
	Err     error
	Elapsed time.Duration
}

// Run runs the pipeline for every image and returns one outcome per image,
// in the order of imgs. The error is non-nil when any image failed; its exit
// code is that of the first failure.
func Run(ctx context.Context, imgs []spec.Image, s Stages, opts ...Option) ([]Outcome, error) {
	o := options{jobs: 1, promote: true, progress: func(Event) {}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, exitcode.Wrap(exitcode.Usage, err)
		}
	}
	out := make([]Outcome, len(imgs))
	// o.jobs images at a time, started in imgs' order; an image's failure
	// is its Outcome's, never a reason to stop the others.
	var g errgroup.Group
	g.SetLimit(o.jobs)
	for i := range imgs {
		g.Go(func() error {
			out[i] = runOne(ctx, imgs[i], s, &o)
			return nil
		})
	}
	_ = g.Wait()
	var errs []error
	for _, oc := range out {
		if oc.Err != nil {
			errs = append(errs, oc.Err)
		}
	}
	if len(errs) == 0 {
		return out, nil
	}
	// The first failure decides the exit code; all are in the message.
	return out, exitcode.Wrap(exitcode.Code(errs[0]), errors.Join(errs...))
}

// platformStatus copies the verify result's platform statuses into
// oc.Platforms.
func (oc *Outcome) platformStatus() {
	if oc.Result == nil {
		return
	}
	for _, ps := range oc.Result.Platforms {
		for i := range oc.Platforms {
			if oc.Platforms[i].Platform == ps.Platform {
				oc.Platforms[i].Verify = ps.Status
			}
		}
	}
}

func runOne(ctx context.Context, img spec.Image, s Stages, o *options) Outcome {
	oc := Outcome{Image: img.Name, Durations: map[string]time.Duration{}}
	log := logs.From(ctx).With("image", img.Name)
	step := func(stage string, f func() (resumed bool, err error)) bool {
		if err := ctx.Err(); err != nil {
			oc.FailedStage, oc.Err = stage, &StageError{Image: img.Name, Stage: stage, Err: err}
			return false
		}
		o.progress(Event{Image: img.Name, Stage: stage, Start: true})
		start := time.Now()
		resumed, err := f()
		el := time.Since(start)
		oc.Durations[stage] = el
		o.progress(Event{Image: img.Name, Stage: stage, Resumed: resumed, Err: err, Elapsed: el})
		if err != nil {
			log.Error("stage failed", "stage", stage, "err", err)
			oc.FailedStage, oc.Err = stage, &StageError{Image: img.Name, Stage: stage, Err: err}
			return false
		}
		oc.Done = append(oc.Done, stage)
		if resumed {
			oc.Resumed = append(oc.Resumed, stage)
		}
		return true
	}

	var l *lock.Lock
	if !step(StageLock, func() (bool, error) {
		var err error
		l, err = s.Lock(ctx, img)
		return false, err
	}) {
		return oc
	}
	var b Built
	if !step(StageBuild, func() (bool, error) {
		var err error
		b, err = s.Build(ctx, l)
		return false, err
	}) {
		return oc
	}
	oc.Ref, oc.Digest, oc.Previous = b.Digest.String(), b.Digest.DigestStr(), b.Previous
	oc.Size, oc.Layers, oc.Changed, oc.Delta = b.Size, b.Layers, b.ChangedLayers, b.ChangedBytes
	for _, p := range b.Platforms {
		oc.Platforms = append(oc.Platforms, PlatformOutcome{Platform: p.Platform, Digest: p.Digest.DigestStr(),
			Size: p.Size, Layers: p.Layers, Changed: p.ChangedLayers, Delta: p.ChangedBytes})
	}
	if !step(StageSign, func() (bool, error) {
		done, err := s.Signed(ctx, l, b.Digest)
		if err != nil || done {
			return done, err
		}
		return false, s.Sign(ctx, l, b.Digest)
	}) {
		return oc
	}
	if !step(StageVerify, func() (bool, error) {
		if r, err := s.Verified(ctx, l, b.Digest); err != nil {
			return false, err
		} else if r != nil {
			oc.Result = r
			return true, nil
		}
		r, err := s.Verify(ctx, l, b.Digest)
		oc.Result = r
		return false, err
	}) {
		oc.platformStatus()
		return oc
	}
	oc.platformStatus()
	if !o.promote {
		return oc
	}
	if s.Scans() && !step(StageScan, func() (bool, error) {
		return false, s.Scan(ctx, l, b.Digest)
	}) {
		return oc
	}
	step(StagePromote, func() (bool, error) {
		p, err := s.Promote(ctx, l, b.Digest)
		oc.Promoted = p
		return false, err
	})
	return oc
}
