package sign

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/signature"
)

// NoSignatureError reports that no signature of Ref verifies under the key:
// there is none (Found is 0), or none that this key made for this digest.
// It means "not signed", never "the registry did not answer".
type NoSignatureError struct {
	Ref name.Digest
	Key string
	// Found is how many signatures Ref carries (by any key).
	Found int
	// Reason is cosign's verification error when Found > 0.
	Reason error
}

func (e *NoSignatureError) Error() string {
	if e.Found == 0 {
		return fmt.Sprintf("no signature for %s", e.Ref)
	}
	return fmt.Sprintf("none of the %d signature(s) of %s verifies with %s: %v", e.Found, e.Ref, e.Key, e.Reason)
}
func (e *NoSignatureError) Unwrap() error { return e.Reason }

// NoAttestationError reports that no attestation of a predicate type
// verified for a digest under the given key. It means "not attested",
// never "the registry did not answer".
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

// Unsigned reports whether err means that ref carries no signature at all
// (as opposed to ones that do not verify).
func Unsigned(err error) bool {
	var ns *NoSignatureError
	return errors.As(err, &ns) && ns.Found == 0
}

// Absent reports whether err means "not there": no signature or no
// attestation of the type verifies under the key (none written yet, or
// none by that key). Every other error (a registry 5xx, a timeout, a
// refused login) means the answer is unknown, and callers must not take it
// for "not done".
func Absent(err error) bool {
	var ns *NoSignatureError
	var na *NoAttestationError
	return errors.As(err, &ns) || errors.As(err, &na)
}

func (o *options) checkOpts(ctx context.Context, v signature.Verifier) *cosign.CheckOpts {
	return &cosign.CheckOpts{
		RegistryClientOpts: o.ociOptions(ctx),
		SigVerifier:        v,
		IgnoreTlog:         true,
		IgnoreSCT:          true,
	}
}

// fetch reads every signature or attestation under cosign's tag for ref
// (sha256-<hex>.sig or .att) into memory: a missing tag is none, and a
// registry failure reading the manifest or any layer is an error, so that
// cosign's verification afterwards sees only what the registry holds
// (cosign reads layers lazily and reports a failed read as a signature
// that does not verify).
func (o *options) fetch(ctx context.Context, tag name.Tag) (oci.Signatures, []oci.Signature, error) {
	sigs, err := ociremote.Signatures(tag, o.ociOptions(ctx)...)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	sl, err := sigs.Get()
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	out := make([]oci.Signature, 0, len(sl))
	for _, s := range sl {
		c, err := static.Copy(s)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", tag, err)
		}
		out = append(out, c)
	}
	return sigs, out, nil
}

// attached is what is under one of cosign's tags for a digest, read.
type attached struct {
	sigs oci.Signatures
	list []oci.Signature
}

func (o *options) fetchSignatures(ctx context.Context, ref name.Digest) (attached, error) {
	tag, err := ociremote.SignatureTag(ref, o.ociOptions(ctx)...)
	if err != nil {
		return attached{}, err
	}
	sigs, sl, err := o.fetch(ctx, tag)
	return attached{sigs, sl}, err
}

func (o *options) fetchAttestations(ctx context.Context, ref name.Digest) (attached, error) {
	tag, err := ociremote.AttestationTag(ref, o.ociOptions(ctx)...)
	if err != nil {
		return attached{}, err
	}
	sigs, sl, err := o.fetch(ctx, tag)
	return attached{sigs, sl}, err
}

// verifySignature is VerifySignature with an open verifier; key names it
// in messages.
func (o *options) verifySignature(ctx context.Context, ref name.Digest, v signature.Verifier, key string) error {
	a, err := o.fetchSignatures(ctx, ref)
	if err != nil {
		return err
	}
	return o.checkSignature(ctx, ref, a, v, key)
}

// checkSignature verifies the signatures read from ref's .sig tag under v.
func (o *options) checkSignature(ctx context.Context, ref name.Digest, a attached, v signature.Verifier, key string) error {
	if len(a.list) == 0 {
		return &NoSignatureError{Ref: ref, Key: key}
	}
	h, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return err
	}
	co := o.checkOpts(ctx, v)
	co.ClaimVerifier = cosign.SimpleClaimVerifier
	var errs []string
	for _, s := range a.list {
		if _, err := cosign.VerifyImageSignature(ctx, s, h, co); err == nil {
			return nil
		} else {
			errs = append(errs, err.Error())
		}
	}
	return &NoSignatureError{Ref: ref, Key: key, Found: len(a.list), Reason: errors.New(strings.Join(errs, "; "))}
}

// VerifySignature checks that ref carries a cosign signature, made by the
// key in pubKeyPath, whose payload names exactly ref's digest: what
// `cosign verify --key pubKeyPath --insecure-ignore-tlog` checks. None is
// a *NoSignatureError (Absent); a registry failure is another error.
func VerifySignature(ctx context.Context, ref name.Digest, pubKeyPath string, opts ...Option) error {
	_, err := underKey(opts, pubKeyPath, func(o *options, v signature.Verifier) (struct{}, error) {
		if err := o.verifySignature(ctx, ref, v, pubKeyPath); err != nil {
			return struct{}{}, fmt.Errorf("verifying signature of %s with %s: %w", ref, pubKeyPath, err)
		}
		return struct{}{}, nil
	})
	return err
}

// verifiedAttestations returns the predicates, by predicate type, of every
// attestation on ref signed by v whose subject is exactly ref's digest.
func (o *options) verifiedAttestations(ctx context.Context, ref name.Digest, v signature.Verifier) (map[string][][]byte, error) {
	a, err := o.fetchAttestations(ctx, ref)
	if err != nil {
		return nil, err
	}
	return o.checkAttestations(ctx, ref, a, v)
}

// checkAttestations verifies the attestations read from ref's .att tag
// under v and returns their predicates by type.
func (o *options) checkAttestations(ctx context.Context, ref name.Digest, a attached, v signature.Verifier) (map[string][][]byte, error) {
	out := map[string][][]byte{}
	if len(a.list) == 0 {
		return out, nil
	}
	h, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return nil, err
	}
	co := o.checkOpts(ctx, v)
	co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	atts, _, err := cosign.VerifyImageAttestation(ctx, &fixedSignatures{Signatures: a.sigs, list: a.list}, h, co)
	var nm *cosign.ErrNoMatchingAttestations
	if errors.As(err, &nm) {
		return out, nil
	} else if err != nil {
		return nil, err
	}
	for _, att := range atts {
		stb, _, err := envelopeStatement(att)
		if err != nil {
			continue
		}
		st, pred, err := ParseStatement(stb)
		if err != nil || !subjectIs(st.GetSubject(), ref) {
			continue
		}
		out[st.GetPredicateType()] = append(out[st.GetPredicateType()], []byte(pred))
	}
	return out, nil
}

// VerifyAttestations returns the predicates of every attestation of
// predicateType on ref that is signed by the key in pubKeyPath and whose
// subject is exactly ref's digest: what `cosign verify-attestation --key
// pubKeyPath --insecure-ignore-tlog --type predicateType` accepts. None is
// a *NoAttestationError (Absent); a registry failure is another error.
func VerifyAttestations(ctx context.Context, ref name.Digest, predicateType, pubKeyPath string, opts ...Option) ([][]byte, error) {
	all, err := Attestations(ctx, ref, pubKeyPath, opts...)
	if err != nil {
		return nil, err
	}
	if len(all[predicateType]) == 0 {
		return nil, &NoAttestationError{Ref: ref, PredicateType: predicateType}
	}
	return all[predicateType], nil
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
