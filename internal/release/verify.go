package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/sign"
	"imagectl/internal/verify"
)

// Verified implements Stages: a passing result for exactly d (of an image
// index, for the image of this host's platform inside it) and l, signed by
// the verifier key, with every other attestation the verifier key writes
// (sign.Required(sign.VerifierKey, false)). A passing result without its
// test-result attestation (a run stopped between the two writes) gets it
// now, from the result, without running the checks again. Only "none
// there" means not verified; a registry that does not answer is an error.
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
	for _, p := range preds[sign.VerificationPredicateType] {
		var res verify.Result
		if json.Unmarshal(p, &res) != nil {
			continue
		}
		if res.Against(img.DigestStr(), l.Digest) == "" {
			return r.completeVerification(ctx, img, &res, found)
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

// completeVerification returns res, the passing verification found on img,
// once img carries every attestation the verifier key writes: a missing
// test-result attestation is written from res (no checks run again);
// another missing one means not verified (nil).
func (r *Real) completeVerification(ctx context.Context, img name.Digest, res *verify.Result, found sign.Found) (*verify.Result, error) {
	var testResult bool
	for _, a := range found.Lacks(sign.Required(sign.VerifierKey, false), nil) {
		if a.PredicateType != sign.TestResultPredicateType {
			return nil, nil
		}
		testResult = true
	}
	if testResult {
		logs.From(ctx).Debug("writing the missing test-result attestation", "image", img.String())
		if err := verify.AttestTestResult(ctx, img, res, r.signOpts(r.cfg.VerifierSignOptions)...); err != nil {
			return nil, fmt.Errorf("completing the verification of %s: %w", img, err)
		}
	}
	return res, nil
}
