package sign

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/signature"
)

// NoAttestationError reports that no attestation of a predicate type
// verified for a digest under the given key.
type NoAttestationError struct {
	Ref           name.Digest
	PredicateType string
	// Err is cosign's verification error, when cosign found none at all.
	Err error
}

func (e *NoAttestationError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("no verified %s attestation for %s: %v", e.PredicateType, e.Ref, e.Err)
	}
	return fmt.Sprintf("no verified %s attestation for %s", e.PredicateType, e.Ref)
}
func (e *NoAttestationError) Unwrap() error { return e.Err }

// Unsigned reports whether err means that ref carries no signature or
// attestation at all (as opposed to ones that do not verify).
func Unsigned(err error) bool {
	var none *cosign.ErrNoSignaturesFound
	return errors.As(err, &none)
}

func (o *options) checkOpts(ctx context.Context, v signature.Verifier) *cosign.CheckOpts {
	return &cosign.CheckOpts{
		RegistryClientOpts: o.ociOptions(ctx),
		SigVerifier:        v,
		IgnoreTlog:         true,
		IgnoreSCT:          true,
	}
}

// VerifySignature checks that ref carries a cosign signature, made by the
// key in pubKeyPath, whose payload names exactly ref's digest: what
// `cosign verify --key pubKeyPath --insecure-ignore-tlog` checks.
func VerifySignature(ctx context.Context, ref name.Digest, pubKeyPath string, opts ...Option) (err error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return err
	}
	defer func() { err = o.access.Classify(err) }()
	v, err := LoadPublicKey(pubKeyPath)
	if err != nil {
		return err
	}
	co := o.checkOpts(ctx, v)
	co.ClaimVerifier = cosign.SimpleClaimVerifier
	if _, _, err := cosign.VerifyImageSignatures(ctx, ref, co); err != nil {
		return fmt.Errorf("verifying signature of %s with %s: %w", ref, pubKeyPath, err)
	}
	return nil
}

// VerifyAttestations returns the predicates of every attestation of
// predicateType on ref that is signed by the key in pubKeyPath and whose
// subject is exactly ref's digest: what `cosign verify-attestation --key
// pubKeyPath --insecure-ignore-tlog --type predicateType` accepts. None is
// a *NoAttestationError.
func VerifyAttestations(ctx context.Context, ref name.Digest, predicateType, pubKeyPath string, opts ...Option) (_ [][]byte, err error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	defer func() { err = o.access.Classify(err) }()
	v, err := LoadPublicKey(pubKeyPath)
	if err != nil {
		return nil, err
	}
	co := o.checkOpts(ctx, v)
	co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	atts, _, err := cosign.VerifyImageAttestations(ctx, ref, co)
	if err != nil {
		return nil, &NoAttestationError{Ref: ref, PredicateType: predicateType, Err: err}
	}
	var out [][]byte
	for _, a := range atts {
		stb, _, err := envelopeStatement(a)
		if err != nil {
			continue
		}
		st, pred, err := ParseStatement(stb)
		if err != nil || st.GetPredicateType() != predicateType {
			continue
		}
		if !subjectIs(st.GetSubject(), ref) {
			continue
		}
		out = append(out, []byte(pred))
	}
	if len(out) == 0 {
		return nil, &NoAttestationError{Ref: ref, PredicateType: predicateType}
	}
	return out, nil
}

func subjectIs(subjects []*intoto.ResourceDescriptor, ref name.Digest) bool {
	alg, hex, _ := cutDigest(ref.DigestStr())
	for _, s := range subjects {
		if s.GetDigest()[alg] == hex {
			return true
		}
	}
	return false
}
