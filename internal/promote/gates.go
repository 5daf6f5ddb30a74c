package promote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/sign"
	"imagectl/internal/verify"
)

// Gate names a promotion gate.
type Gate string

const (
	// GateDigest: the release's source is a digest reference, never a tag.
	GateDigest Gate = "digest"
	// GateSignature: the digest carries a cosign signature for exactly this
	// digest by a trusted signing key.
	GateSignature Gate = "signature"
	// GateVerification: the digest carries a verification attestation for
	// exactly this digest, passing, against the lock in git, signed by a
	// trusted verifier key (with WithRequireContainerRuntime: by a
	// container runtime that started the digest).
	GateVerification Gate = "verification"
	// GateLock: the digest carries a lock attestation by a trusted signing
	// key whose lock equals the lock in git.
	GateLock Gate = "lock"
	// GateImmutableTag: a release tag already points at another digest in
	// the release repository; release tags never move.
	GateImmutableTag Gate = "immutable-tag"
)

// Refusal is one gate refusing one release.
type Refusal struct {
	Source string `json:"source"`
	Gate   Gate   `json:"gate"`
	Reason string `json:"reason"`
}

func (r Refusal) String() string {
	return fmt.Sprintf("%s: gate %s refused: %s", r.Source, r.Gate, r.Reason)
}

// RefusedError is returned when any gate refused any release (by Run:
// nothing was copied and no tag was moved) or the pinned digest (by Pin).
type RefusedError struct {
	// Pin is true when Pin refused; false for a promotion.
	Pin      bool
	Refusals []Refusal
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	if e.Pin {
		fmt.Fprintf(&b, "pin refused: the digest failed %d check(s)", len(e.Refusals))
	} else {
		fmt.Fprintf(&b, "promotion refused (%d refusal(s); nothing was copied)", len(e.Refusals))
	}
	for _, r := range e.Refusals {
		b.WriteString("\n  ")
		b.WriteString(r.String())
	}
	return b.String()
}

// ExitCode implements exitcode.Coder.
func (e *RefusedError) ExitCode() int { return exitcode.PromotionRefused }

// Gates reports whether the error was refused by gate g.
func (e *RefusedError) Has(g Gate) bool {
	for _, r := range e.Refusals {
		if r.Gate == g {
			return true
		}
	}
	return false
}

// What the verification gate found for one platform of an image index.
const (
	// PlatformVerified: a passing verification of the platform's image.
	PlatformVerified = "verified"
	// PlatformSkipped: none, and the platform is named by WithSkipPlatforms.
	PlatformSkipped = "skipped"
	// PlatformUnverified: none, and the platform may not be skipped.
	PlatformUnverified = "unverified"
)

// PlatformVerification is one platform's image of an image index at the
// verification gate.
type PlatformVerification struct {
	Platform string `json:"platform"`
	// Digest is the platform's image inside the index, sha256:...
	Digest string `json:"digest"`
	// Status is PlatformVerified, PlatformSkipped or PlatformUnverified.
	Status string `json:"status"`
}

// checkGates runs the signature, verification and lock gates for one
// source digest and returns every refusal, not just the first. With a nil
// l (pin: no git at hand) the lock gate accepts any valid lock attestation
// by a trusted key, and the verification must name that lock.
//
// A registry that cannot be reached is an error (exit 69), not a refusal:
// a gate refuses only on what the registry answered.
func (o *options) checkGates(ctx context.Context, src name.Digest, l *lock.Lock, lockPath string) ([]Refusal, error) {
	_, refusals, err := o.gates(ctx, src, l, lockPath, nil)
	return refusals, err
}

// unreachable reports whether err means the registry did not answer
// (connection refused or reset, timeout, a 5xx), rather than a missing or
// failing signature.
func unreachable(err error) bool {
	var ue *url.Error
	var ne net.Error
	var te *transport.Error
	switch {
	case errors.As(err, &te):
		return te.StatusCode >= 500
	case errors.As(err, &ue), errors.As(err, &ne):
		return true
	}
	return false
}

// denied is the *auth.Error for a 401/403 in err's chain, else nil: a
// registry that refuses the credentials is neither a gate refusal (5) nor
// unreachable (69).
func (o *options) denied(err error) error {
	var ae *auth.Error
	if errors.As(o.access.Classify(err), &ae) {
		return ae
	}
	return nil
}

func unavailable(src name.Digest, err error) error {
	return exitcode.Wrap(exitcode.Unavailable, fmt.Errorf("checking the gates of %s: registry unreachable: %w", src, err))
}

// gates is checkGates, also returning the attested lock; for an image
// index it appends what the verification gate found for each platform to
// platforms when that is not nil.
func (o *options) gates(ctx context.Context, src name.Digest, l *lock.Lock, lockPath string, platforms *[]PlatformVerification) (*lock.Lock, []Refusal, error) {
	refuse := func(g Gate, format string, args ...any) Refusal {
		return Refusal{Source: src.String(), Gate: g, Reason: fmt.Sprintf(format, args...)}
	}
	var out []Refusal
	sopts := []sign.Option{sign.WithAccess(o.access), sign.WithRemoteOptions(o.remote...)}

	// Signature by a trusted key.
	var sigErrs []string
	signed := false
	for _, k := range o.trustedKeys {
		err := sign.VerifySignature(ctx, src, k, sopts...)
		if err == nil {
			signed = true
			break
		}
		if ae := o.denied(err); ae != nil {
			return nil, nil, ae
		}
		if unreachable(err) {
			return nil, nil, unavailable(src, err)
		}
		sigErrs = append(sigErrs, err.Error())
	}
	if len(o.trustedKeys) == 0 {
		sigErrs = append(sigErrs, "no trusted key configured")
	}
	if !signed {
		out = append(out, refuse(GateSignature, "no signature for this digest by a trusted key (%s)", strings.Join(sigErrs, "; ")))
	}

	// Lock attestation equal to the lock in git (or, for pin, any valid one).
	var want []byte
	if l != nil {
		var err error
		if want, err = sign.LockPredicate(l); err != nil {
			out = append(out, refuse(GateLock, "the lock in git cannot be encoded: %v", err))
			return nil, out, nil
		}
	}
	var lerr []string
	var attested *lock.Lock
	for _, k := range o.trustedKeys {
		preds, err := sign.VerifyAttestations(ctx, src, sign.LockPredicateType, k, sopts...)
		if ae := o.denied(err); ae != nil {
			return nil, nil, ae
		}
		if unreachable(err) {
			return nil, nil, unavailable(src, err)
		}
		if err != nil {
			lerr = append(lerr, err.Error())
			continue
		}
		for _, p := range preds {
			got, err := lock.Parse("lock attestation", p)
			if err != nil {
				lerr = append(lerr, err.Error())
				continue
			}
			if l != nil {
				gb, err := sign.LockPredicate(got)
				if err != nil || !bytes.Equal(gb, want) {
					lerr = append(lerr, fmt.Sprintf("the attested lock (%s) differs from %s (%s)", got.Digest, lockPath, l.Digest))
					continue
				}
			}
			attested = got
			break
		}
		if attested != nil {
			break
		}
	}
	if len(o.trustedKeys) == 0 {
		lerr = append(lerr, "no trusted key configured")
	}
	if attested == nil {
		what := "equal to the lock in git"
		if l == nil {
			what = "holding a valid lock"
		}
		out = append(out, refuse(GateLock, "no lock attestation by a trusted key %s (%s)", what, strings.Join(lerr, "; ")))
	}
	wantLock := ""
	switch {
	case l != nil:
		wantLock = l.Digest
	case attested != nil:
		wantLock = attested.Digest
	}

	// Verification attestation by a trusted verifier key, for exactly this
	// digest, passing, against the lock; for an image index, of every
	// platform's image (WithSkipPlatforms names those that may go without).
	lk := l
	if lk == nil {
		lk = attested
	}
	if lk != nil && len(lk.Platforms) > 0 {
		children, err := sign.Children(ctx, src, lk, sopts...)
		if ae := o.denied(err); ae != nil {
			return nil, nil, ae
		}
		if unreachable(err) {
			return nil, nil, unavailable(src, err)
		}
		if err != nil {
			out = append(out, refuse(GateVerification, "the image index does not hold the lock's platforms: %v", err))
			return attested, out, nil
		}
		var missing, skipped, verified []string
		for _, c := range children {
			ok, verr, err := o.verified(ctx, c.Ref, wantLock, sopts)
			if err != nil {
				return nil, nil, err
			}
			pv := PlatformVerification{Platform: c.Platform, Digest: c.Ref.DigestStr()}
			switch {
			case ok:
				verified = append(verified, c.Platform)
				pv.Status = PlatformVerified
			case slices.Contains(o.skipPlatforms, c.Platform):
				skipped = append(skipped, c.Platform)
				pv.Status = PlatformSkipped
			default:
				missing = append(missing, fmt.Sprintf("%s %s: %s", c.Platform, c.Ref.DigestStr(), strings.Join(verr, "; ")))
				pv.Status = PlatformUnverified
			}
			if platforms != nil {
				*platforms = append(*platforms, pv)
			}
		}
		if len(missing) > 0 {
			out = append(out, refuse(GateVerification, "platforms of the image index without a passing verification of their own image: %s; verify each on a GPU host of that platform, or name the ones this release may skip (--skip-platform)", strings.Join(missing, "; ")))
		} else if len(verified) == 0 {
			out = append(out, refuse(GateVerification, "no platform of the image index is verified (skipped: %s); at least one must be", strings.Join(skipped, ", ")))
		}
		return attested, out, nil
	}
	passed, verr, err := o.verified(ctx, src, wantLock, sopts)
	if err != nil {
		return nil, nil, err
	}
	if !passed {
		if len(o.verifierKeys) == 0 {
			verr = append(verr, "no trusted verifier key configured")
		}
		out = append(out, refuse(GateVerification, "no passing verification of this digest by a trusted verifier key (%s)", strings.Join(verr, "; ")))
	}

	return attested, out, nil
}

// verified reports whether src has a passing verification of exactly
// src by a trusted verifier key against the lock wantLock, with the
// reasons of the results that did not count.
func (o *options) verified(ctx context.Context, src name.Digest, wantLock string, sopts []sign.Option) (bool, []string, error) {
	var verr []string
	for _, k := range o.verifierKeys {
		preds, err := sign.VerifyAttestations(ctx, src, verify.PredicateType, k, sopts...)
		if ae := o.denied(err); ae != nil {
			return false, nil, ae
		}
		if unreachable(err) {
			return false, nil, unavailable(src, err)
		}
		if err != nil {
			verr = append(verr, err.Error())
			continue
		}
		for _, p := range preds {
			var r verify.Result
			if err := json.Unmarshal(p, &r); err != nil {
				verr = append(verr, fmt.Sprintf("verification predicate is not a result: %v", err))
				continue
			}
			switch {
			case r.Digest != src.DigestStr():
				verr = append(verr, fmt.Sprintf("the verification result is for %s, not this digest", r.Digest))
			case !r.Passed:
				verr = append(verr, fmt.Sprintf("verification failed (%s)", failedChecks(r)))
			case wantLock == "":
				verr = append(verr, "no lock to compare the verified lock with")
			case r.LockDigest != wantLock:
				verr = append(verr, fmt.Sprintf("verified against lock %s, but the lock is %s", r.LockDigest, wantLock))
			case o.requireContainer && (!verify.IsContainerRuntime(r.Runtime) || r.Proof == ""):
				verr = append(verr, fmt.Sprintf("verified by the %s runtime (proof %q); the gate requires a container runtime that started this digest", r.Runtime, r.Proof))
			default:
				return true, nil, nil
			}
		}
	}
	return false, verr, nil
}

func failedChecks(r verify.Result) string {
	var names []string
	for _, c := range r.Checks {
		if c.Status == verify.Fail {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "passed=false"
	}
	return "failed checks: " + strings.Join(names, ", ")
}
