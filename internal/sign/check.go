package sign

import (
	"bytes"
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/signature"

	"imagectl/internal/lock"
)

// Found is what one key has signed on one digest, each piece verified.
type Found struct {
	Ref name.Digest
	// SignatureErr is nil when a signature by the key verifies for Ref,
	// else the *NoSignatureError saying why not.
	SignatureErr error
	// Predicates are the predicates of the attestations that verify under
	// the key with Ref as their subject, by predicate type.
	Predicates map[string][][]byte
}

// Signed reports whether a signature by the key verifies.
func (f *Found) Signed() bool { return f.SignatureErr == nil }

// Has reports whether an attestation of a's type verifies; for the lock
// attestation with lockPred non-nil, one whose predicate is exactly
// lockPred.
func (f *Found) Has(a Attestation, lockPred []byte) bool {
	for _, p := range f.Predicates[a.PredicateType] {
		if a.PredicateType != LockPredicateType || lockPred == nil || sameLock(p, lockPred) {
			return true
		}
	}
	return false
}

// sameLock reports whether the lock attestation's predicate p (as the
// statement carried it: its JSON re-encoded) holds the lock whose canonical
// encoding is want.
func sameLock(p, want []byte) bool {
	got, err := lock.Parse("lock attestation", p)
	if err != nil {
		return false
	}
	b, err := LockPredicate(got)
	return err == nil && bytes.Equal(b, want)
}

// Lacks returns the attestations of req that f does not have (Has).
func (f *Found) Lacks(req []Attestation, lockPred []byte) []Attestation {
	var out []Attestation
	for _, a := range req {
		if !f.Has(a, lockPred) {
			out = append(out, a)
		}
	}
	return out
}

func (o *options) inspect(ctx context.Context, ref name.Digest, v signature.Verifier, key string) (*Found, error) {
	fs, err := o.inspectKeys(ctx, ref, []signature.Verifier{v}, []string{key})
	if err != nil {
		return nil, err
	}
	return fs[0], nil
}

// inspectKeys reads ref's .sig and .att tags once and verifies them under
// each verifier (keys name them in messages).
func (o *options) inspectKeys(ctx context.Context, ref name.Digest, vs []signature.Verifier, keys []string) ([]*Found, error) {
	sigs, err := o.fetchSignatures(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("verifying the signature of %s: %w", ref, err)
	}
	atts, err := o.fetchAttestations(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("verifying the attestations of %s: %w", ref, err)
	}
	var out []*Found
	for i, v := range vs {
		f := &Found{Ref: ref}
		if err := o.checkSignature(ctx, ref, sigs, v, keys[i]); err != nil && !Absent(err) {
			return nil, fmt.Errorf("verifying the signature of %s: %w", ref, err)
		} else {
			f.SignatureErr = err
		}
		if f.Predicates, err = o.checkAttestations(ctx, ref, atts, v); err != nil {
			return nil, fmt.Errorf("verifying the attestations of %s: %w", ref, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// InspectKeys is Inspect under each key of pubKeyPaths, in that order,
// reading cosign's .sig and .att tags once for all of them.
func InspectKeys(ctx context.Context, ref name.Digest, pubKeyPaths []string, opts ...Option) (_ []*Found, err error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	defer func() { err = o.access.Classify(err) }()
	var vs []signature.Verifier
	for _, p := range pubKeyPaths {
		v, err := LoadPublicKey(p)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return o.inspectKeys(ctx, ref, vs, pubKeyPaths)
}

// Inspect verifies ref's signature and every attestation on it under the
// key in pubKeyPath: one read of each of cosign's .sig and .att tags. What
// is not there (or not by this key) is absent from the Found; an error
// means the registry did not answer (or refused the credentials), never
// that something is missing.
func Inspect(ctx context.Context, ref name.Digest, pubKeyPath string, opts ...Option) (*Found, error) {
	return underKey(opts, pubKeyPath, func(o *options, v signature.Verifier) (*Found, error) {
		return o.inspect(ctx, ref, v, pubKeyPath)
	})
}

// underKey runs f with the options opts make and the public key in
// pubKeyPath: the preamble of every check under one key. What fails once
// the options are made is classified by their access (a registry's 401/403
// is an *auth.Error).
func underKey[T any](opts []Option, pubKeyPath string, f func(o *options, v signature.Verifier) (T, error)) (_ T, err error) {
	var zero T
	o, err := makeOptions(opts...)
	if err != nil {
		return zero, err
	}
	defer func() { err = o.access.Classify(err) }()
	v, err := LoadPublicKey(pubKeyPath)
	if err != nil {
		return zero, err
	}
	return f(o, v)
}

// Attestations returns the predicates, by predicate type, of every
// attestation on ref that verifies under the key in pubKeyPath with ref as
// its subject: Inspect without the signature. None is an empty map; an
// error means the registry did not answer.
func Attestations(ctx context.Context, ref name.Digest, pubKeyPath string, opts ...Option) (map[string][][]byte, error) {
	return underKey(opts, pubKeyPath, func(o *options, v signature.Verifier) (map[string][][]byte, error) {
		preds, err := o.verifiedAttestations(ctx, ref, v)
		if err != nil {
			return nil, fmt.Errorf("verifying the attestations of %s: %w", ref, err)
		}
		return preds, nil
	})
}

// Missing names what ref lacks of what SignAndAttest writes with the key
// whose public half is pubKeyPath: the signature and the SigningKey
// attestations of ReleaseAttestations, each verified; for an image index
// built from l (l has platforms), the index's own (Required(SigningKey,
// true)) and every platform's image's. The lock attestation counts only
// when it holds exactly l. Nil means complete. Only "not there" is
// missing: a registry failure is an error.
func Missing(ctx context.Context, ref name.Digest, l *lock.Lock, pubKeyPath string, opts ...Option) ([]string, error) {
	return underKey(opts, pubKeyPath, func(o *options, v signature.Verifier) ([]string, error) {
		lp, err := LockPredicate(l)
		if err != nil {
			return nil, err
		}
		type target struct {
			ref   name.Digest
			index bool
			what  string
		}
		targets := []target{{ref: ref, index: len(l.Platforms) > 0, what: ref.DigestStr()}}
		if len(l.Platforms) > 0 {
			children, err := Children(ctx, ref, l, opts...)
			if err != nil {
				return nil, err
			}
			for _, c := range children {
				targets = append(targets, target{ref: c.Ref, what: c.Platform + " image " + c.Ref.DigestStr()})
			}
		}
		var missing []string
		for _, t := range targets {
			f, err := o.inspect(ctx, t.ref, v, pubKeyPath)
			if err != nil {
				return nil, err
			}
			if !f.Signed() {
				missing = append(missing, "signature of "+t.what)
			}
			for _, a := range f.Lacks(Required(SigningKey, t.index), lp) {
				missing = append(missing, a.Name+" attestation of "+t.what)
			}
		}
		return missing, nil
	})
}
