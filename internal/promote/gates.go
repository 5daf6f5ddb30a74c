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
	"imagectl/internal/releasefile"
	"imagectl/internal/sign"
	"imagectl/internal/verify/result"
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
	// exactly this digest, passing, against the release's lock, signed by a
	// trusted verifier key (with WithRequireContainerRuntime: by a
	// container runtime that started the digest).
	GateVerification Gate = "verification"
	// GateLock: the digest carries a lock attestation by a trusted signing
	// key whose lock is the release's own: the lock in git for a release
	// built from it, else the lock its lock_digest records.
	GateLock Gate = "lock"
	// GateAttestations: the digest (and, of an image index, every
	// platform's image) carries every attestation of
	// sign.ReleaseAttestations by a trusted key: its SBOMs, its
	// provenance, and whatever else a release writes.
	GateAttestations Gate = "attestations"
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

// wantLock is the lock a release is gated against: its own.
type wantLock struct {
	// l is the lock in git: the attested lock must equal it.
	l *lock.Lock
	// digest, when l is nil, is the release's recorded lock digest: the
	// attested lock must be that lock. With neither (pin), any valid lock
	// attestation by a trusted key is the lock.
	digest string
	// what names the lock in messages.
	what string
}

// releaseLock is the lock release r is gated against: the lock in git
// (l, read from lockPath) when r was built from it or records no lock
// digest, else the lock r records (LockDigest), so that an old month is
// gated against its own lock and never blocks a newer one.
func releaseLock(r releasefile.Release, l *lock.Lock, lockPath string) wantLock {
	if r.LockDigest == "" || r.LockDigest == l.Digest {
		return wantLock{l: l, what: lockPath}
	}
	return wantLock{digest: r.LockDigest, what: "the release's lock_digest " + r.LockDigest}
}

// checkGates runs the signature, attestation, lock and verification gates
// for one source digest and returns every refusal, not just the first.
//
// A registry that cannot be reached is an error (exit 69), not a refusal:
// a gate refuses only on what the registry answered.
func (o *options) checkGates(ctx context.Context, src name.Digest, want wantLock) ([]Refusal, error) {
	_, refusals, err := o.gates(ctx, src, want, nil)
	if err != nil {
		return nil, err
	}
	vr, err := o.vulnGate(ctx, src, want.l) // vulngate.go
	return append(refusals, vr...), err
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

// gateError is err from checking src's gates: a refused login (77), an
// unreachable registry (69), or another failure; never a refusal.
func (o *options) gateError(src name.Digest, err error) error {
	if ae := o.denied(err); ae != nil {
		return ae
	}
	if unreachable(err) {
		return unavailable(src, err)
	}
	return fmt.Errorf("checking the gates of %s: %w", src, err)
}

// inspect is what each trusted key and each verifier key signed on ref,
// each piece verified, from one read of its .sig and .att tags.
func (o *options) inspect(ctx context.Context, ref name.Digest, sopts []sign.Option) (trusted, verifiers []*sign.Found, err error) {
	keys := append(append([]string(nil), o.trustedKeys...), o.verifierKeys...)
	if len(keys) == 0 {
		return nil, nil, nil
	}
	fs, err := sign.InspectKeys(ctx, ref, keys, sopts...)
	if err != nil {
		return nil, nil, err
	}
	return fs[:len(o.trustedKeys)], fs[len(o.trustedKeys):], nil
}

// signatureRefusal refuses what is not signed by any key of found.
func signatureRefusal(src name.Digest, what string, found []*sign.Found) *Refusal {
	var why []string
	for _, f := range found {
		if f.Signed() {
			return nil
		}
		why = append(why, f.SignatureErr.Error())
	}
	if len(found) == 0 {
		why = append(why, "no trusted key configured")
	}
	return &Refusal{Source: src.String(), Gate: GateSignature, Reason: fmt.Sprintf("no signature for %s by a trusted key (%s)", what, strings.Join(why, "; "))}
}

// attestationRefusals refuses, one refusal each, the attestations of req
// that no key of found carries for what (the lock attestation only when it
// holds exactly lockPred).
func attestationRefusals(src name.Digest, what, by string, found []*sign.Found, req []sign.Attestation, lockPred []byte) []Refusal {
	var out []Refusal
	for _, a := range req {
		has := false
		for _, f := range found {
			has = has || f.Has(a, lockPred)
		}
		if !has {
			out = append(out, Refusal{Source: src.String(), Gate: GateAttestations,
				Reason: fmt.Sprintf("no %s attestation (%s) for %s by a trusted %s key", a.Name, a.PredicateType, what, by)})
		}
	}
	return out
}

// without is req less the attestation of predicate type typ.
func without(req []sign.Attestation, typ string) []sign.Attestation {
	var out []sign.Attestation
	for _, a := range req {
		if a.PredicateType != typ {
			out = append(out, a)
		}
	}
	return out
}

// gates is checkGates, also returning the attested lock; for an image
// index it appends what the verification gate found for each platform to
// platforms when that is not nil. Every attestation of
// sign.ReleaseAttestations is required: on a single-platform image, all of
// them; on an image index, its own (sign.Required(..., true)) and all of
// them on every platform's image (the verification only on the platforms
// not skipped).
func (o *options) gates(ctx context.Context, src name.Digest, want wantLock, platforms *[]PlatformVerification) (*lock.Lock, []Refusal, error) {
	refuse := func(g Gate, format string, args ...any) Refusal {
		return Refusal{Source: src.String(), Gate: g, Reason: fmt.Sprintf(format, args...)}
	}
	var out []Refusal
	sopts := []sign.Option{sign.WithAccess(o.access), sign.WithRemoteOptions(o.remote...)}
	found, verifiers, err := o.inspect(ctx, src, sopts)
	if err != nil {
		return nil, nil, o.gateError(src, err)
	}
	if r := signatureRefusal(src, "this digest", found); r != nil {
		out = append(out, *r)
	}

	// The lock attestation: the release's own lock (or, for pin, any valid one).
	var wantPred []byte
	if want.l != nil {
		if wantPred, err = sign.LockPredicate(want.l); err != nil {
			out = append(out, refuse(GateLock, "the lock in git cannot be encoded: %v", err))
			return nil, out, nil
		}
	}
	var lerr []string
	var attested *lock.Lock
	for _, f := range found {
		for _, p := range f.Predicates[sign.LockPredicateType] {
			got, err := lock.Parse("lock attestation", p)
			if err != nil {
				lerr = append(lerr, err.Error())
				continue
			}
			if want.l != nil {
				if gb, err := sign.LockPredicate(got); err != nil || !bytes.Equal(gb, wantPred) {
					lerr = append(lerr, fmt.Sprintf("the attested lock (%s) differs from %s (%s)", got.Digest, want.what, want.l.Digest))
					continue
				}
			} else if want.digest != "" && got.Digest != want.digest {
				lerr = append(lerr, fmt.Sprintf("the attested lock is %s, not %s", got.Digest, want.what))
				continue
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
		what := "equal to " + want.what
		if want.l == nil && want.digest == "" {
			what = "holding a valid lock"
		}
		if len(lerr) == 0 {
			lerr = append(lerr, "none found")
		}
		out = append(out, refuse(GateLock, "no lock attestation by a trusted key %s (%s)", what, strings.Join(lerr, "; ")))
	}
	lk := want.l
	if lk == nil {
		lk = attested
	}
	wantLockDigest := want.digest
	if lk != nil {
		wantLockDigest = lk.Digest
	}
	index := lk != nil && len(lk.Platforms) > 0
	out = append(out, attestationRefusals(src, "this digest", "signing", found, without(sign.Required(sign.SigningKey, index), sign.LockPredicateType), nil)...)
	if !index {
		return attested, append(out, o.verified(src, "this digest", wantLockDigest, verifiers)...), nil
	}

	// An image index: every platform's image signed and attested, and
	// verified (WithSkipPlatforms names those that may go without).
	lockPred, err := sign.LockPredicate(lk)
	if err != nil {
		return nil, append(out, refuse(GateLock, "the lock cannot be encoded: %v", err)), nil
	}
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
		what := c.Platform + " image " + c.Ref.DigestStr()
		cf, cv, err := o.inspect(ctx, c.Ref, sopts)
		if err != nil {
			return nil, nil, o.gateError(src, err)
		}
		if r := signatureRefusal(src, "the "+what, cf); r != nil {
			out = append(out, *r)
		}
		out = append(out, attestationRefusals(src, "the "+what, "signing", cf, sign.Required(sign.SigningKey, false), lockPred)...)
		rr := o.verified(c.Ref, "the "+what, wantLockDigest, cv)
		pv := PlatformVerification{Platform: c.Platform, Digest: c.Ref.DigestStr()}
		switch {
		case len(rr) == 0:
			verified = append(verified, c.Platform)
			pv.Status = PlatformVerified
		case slices.Contains(o.skipPlatforms, c.Platform):
			skipped = append(skipped, c.Platform)
			pv.Status = PlatformSkipped
		default:
			var why []string
			for _, r := range rr {
				why = append(why, r.Reason)
			}
			missing = append(missing, fmt.Sprintf("%s %s: %s", c.Platform, c.Ref.DigestStr(), strings.Join(why, "; ")))
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

// verified refuses ref (what names it) unless found, what the verifier
// keys signed on it, has a passing verification of exactly ref against the
// lock wantLock, and every other attestation the verifier key writes
// (sign.Required(sign.VerifierKey, false)). No refusal means verified.
func (o *options) verified(ref name.Digest, what, wantLock string, found []*sign.Found) []Refusal {
	var verr []string
	passed := false
	for _, f := range found {
		for _, p := range f.Predicates[sign.VerificationPredicateType] {
			var r result.Result
			if err := json.Unmarshal(p, &r); err != nil {
				verr = append(verr, fmt.Sprintf("verification predicate is not a result: %v", err))
				continue
			}
			why := r.Against(ref.DigestStr(), wantLock)
			switch {
			case why != "":
				verr = append(verr, why)
			case o.requireContainer && (!result.IsContainerRuntime(r.Runtime) || r.Proof == ""):
				verr = append(verr, fmt.Sprintf("verified by the %s runtime (proof %q); the gate requires a container runtime that started this digest", r.Runtime, r.Proof))
			default:
				passed = true
			}
		}
	}
	var out []Refusal
	if !passed {
		if len(o.verifierKeys) == 0 {
			verr = append(verr, "no trusted verifier key configured")
		}
		if len(verr) == 0 {
			verr = append(verr, "none found")
		}
		out = append(out, Refusal{Source: ref.String(), Gate: GateVerification,
			Reason: fmt.Sprintf("no passing verification of %s by a trusted verifier key (%s)", what, strings.Join(verr, "; "))})
	}
	return append(out, attestationRefusals(ref, what, "verifier", found, without(sign.Required(sign.VerifierKey, false), sign.VerificationPredicateType), nil)...)
}
