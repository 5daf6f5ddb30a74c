package sign

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	cremote "github.com/sigstore/cosign/v2/pkg/cosign/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/cosign/v2/pkg/types"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/sbom"
)

// ociOptions are the cosign registry options for one call: cosign's own
// defaults (ociremote's default keychain) extended with the access's
// keychain and transport, the caller's options and the context.
func (o *options) ociOptions(ctx context.Context) []ociremote.Option {
	return []ociremote.Option{ociremote.WithRemoteOptions(o.remoteOptions(ctx)...)}
}

func (o *options) remoteOptions(ctx context.Context) []remote.Option {
	ro := append(o.access.RemoteOptions(), o.remote...)
	return append(ro, remote.WithContext(ctx))
}

// Sign writes a cosign signature for ref to ref's repository under the tag
// sha256-<hex>.sig. The signed payload is cosign's simple-signing payload
// naming the digest; signing the same digest again with the same key adds
// nothing. The image must exist.
func Sign(ctx context.Context, ref name.Digest, opts ...Option) (err error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return err
	}
	defer func() { err = o.access.Classify(err) }()
	if _, err := remote.Head(ref, o.remoteOptions(ctx)...); err != nil {
		return fmt.Errorf("resolving %s: %w", ref, err)
	}
	sv, err := o.signer(ctx)
	if err != nil {
		return err
	}
	p, err := payload.Cosign{Image: ref}.MarshalJSON()
	if err != nil {
		return fmt.Errorf("signing %s: %w", ref, err)
	}
	raw, err := sv.SignMessage(bytes.NewReader(p), sigopts.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("signing %s: %w", ref, err)
	}
	sig, err := static.NewSignature(p, base64.StdEncoding.EncodeToString(raw))
	if err != nil {
		return fmt.Errorf("signing %s: %w", ref, err)
	}
	oo := o.ociOptions(ctx)
	se, err := mutate.AttachSignatureToEntity(ociremote.SignedUnknown(ref, oo...), sig,
		mutate.WithDupeDetector(cremote.NewDupeDetector(sv)))
	if err != nil {
		return fmt.Errorf("attaching signature to %s: %w", ref, err)
	}
	if err := ociremote.WriteSignatures(ref.Repository, se, oo...); err != nil {
		return fmt.Errorf("writing signature of %s: %w", ref, err)
	}
	logs.From(ctx).Info("signed", "image", ref.String(), "offline", o.offline)
	return nil
}

// Attest writes a signed in-toto statement about ref (subject: ref's
// repository and digest) with the given predicate type and JSON predicate,
// as a DSSE envelope under the tag sha256-<hex>.att. An earlier attestation
// of the same predicate type is replaced; the same statement signed by the
// same key again adds nothing.
func Attest(ctx context.Context, ref name.Digest, predicateType string, predicate []byte, opts ...Option) (err error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return err
	}
	defer func() { err = o.access.Classify(err) }()
	st, err := NewStatement(ref, predicateType, predicate)
	if err != nil {
		return err
	}
	if _, err := remote.Head(ref, o.remoteOptions(ctx)...); err != nil {
		return fmt.Errorf("resolving %s: %w", ref, err)
	}
	sv, err := o.signer(ctx)
	if err != nil {
		return err
	}
	env, err := dsse.WrapSigner(sv, types.IntotoPayloadType).SignMessage(bytes.NewReader(st), sigopts.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("signing %s attestation of %s: %w", predicateType, ref, err)
	}
	att, err := static.NewAttestation(env,
		static.WithLayerMediaType(types.DssePayloadType),
		static.WithAnnotations(map[string]string{"predicateType": predicateType}))
	if err != nil {
		return fmt.Errorf("attesting %s: %w", ref, err)
	}
	oo := o.ociOptions(ctx)
	se, err := mutate.AttachAttestationToEntity(ociremote.SignedUnknown(ref, oo...), att,
		mutate.WithDupeDetector(&sameStatement{verifier: sv}),
		mutate.WithReplaceOp(&replaceType{predicateType: predicateType}))
	if err != nil {
		return fmt.Errorf("attaching attestation to %s: %w", ref, err)
	}
	if err := ociremote.WriteAttestations(ref.Repository, se, oo...); err != nil {
		return fmt.Errorf("writing attestation of %s: %w", ref, err)
	}
	logs.From(ctx).Info("attested", "image", ref.String(), "predicate_type", predicateType, "offline", o.offline)
	return nil
}

func cutDigest(d string) (alg, hex string, ok bool) {
	for i := 0; i < len(d); i++ {
		if d[i] == ':' {
			return d[:i], d[i+1:], i > 0 && i < len(d)-1
		}
	}
	return "", "", false
}

// SignAndAttest signs ref and writes its build attestations (the
// SigningKey ones of ReleaseAttestations: lock, SPDX and CycloneDX SBOMs,
// SLSA provenance) with the key in opts: what `imagectl sign` and
// `imagectl build --sign` do. The SBOMs list the packages the image holds
// (sbom.Read reads its layers), so ref must be an image built from l.
//
// What ref already carries and verifies under the key is kept, and only
// the rest is written: signing again writes nothing, and a run interrupted
// after some attestations writes the others when run again.
//
// For a lock with several platforms ref is the image index built from it:
// every child is signed and attested as the single-platform image of its
// platform's view of the lock (lock.ForPlatform; its SBOMs list that
// image's packages), then the index itself is signed and gets the lock and
// provenance attestations. An index whose children are not exactly the
// lock's platforms is refused before anything is signed.
func SignAndAttest(ctx context.Context, ref name.Digest, l *lock.Lock, b Builder, opts ...Option) (err error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return err
	}
	defer func() { err = o.access.Classify(err) }()
	if len(l.Platforms) == 0 {
		return signAndAttestImage(ctx, ref, l, l, b, o, opts)
	}
	children, err := Children(ctx, ref, l, opts...)
	if err != nil {
		return err
	}
	sv, err := LoadSigner(ctx, opts...)
	if err != nil {
		return err
	}
	opts = append(opts, WithSigner(sv))
	for _, c := range children {
		view, err := l.ForPlatform(c.Platform)
		if err != nil {
			return err
		}
		if err := signAndAttestImage(ctx, c.Ref, l, view, b, o, opts); err != nil {
			return fmt.Errorf("%s image of %s: %w", c.Platform, ref, err)
		}
	}
	lp, err := LockPredicate(l)
	if err != nil {
		return err
	}
	return complete(ctx, ref, Required(SigningKey, true), lp, sv, o, opts, func(typ string) ([]byte, error) {
		switch typ {
		case LockPredicateType:
			return lp, nil
		case ProvenancePredicateType:
			return Provenance(l, b)
		}
		return nil, fmt.Errorf("no %s attestation for an image index", typ)
	})
}

// complete signs ref and writes the attestations of req that it does not
// carry yet under sv (the lock attestation counts only when it holds
// exactly lockPred); pred makes a predicate when it is needed.
func complete(ctx context.Context, ref name.Digest, req []Attestation, lockPred []byte, sv signature.SignerVerifier, o *options, opts []Option, pred func(typ string) ([]byte, error)) error {
	f, err := o.inspect(ctx, ref, sv, "the signing key")
	if err != nil {
		return err
	}
	if !f.Signed() {
		if err := Sign(ctx, ref, opts...); err != nil {
			return err
		}
	}
	for _, a := range f.Lacks(req, lockPred) {
		p, err := pred(a.PredicateType)
		if err != nil {
			return err
		}
		if err := Attest(ctx, ref, a.PredicateType, p, opts...); err != nil {
			return err
		}
	}
	return nil
}

// Child is one platform's image inside an image index.
type Child struct {
	Platform string
	Ref      name.Digest
}

// Children reads the index at ref and returns its images in the order of
// l's platforms. It fails when ref is not an index, or when its images are
// not exactly one per platform of l.
func Children(ctx context.Context, ref name.Digest, l *lock.Lock, opts ...Option) ([]Child, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	idx, err := remote.Index(ref, o.remoteOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("reading the image index %s: %w", ref, err)
	}
	all, err := IndexImages(ref, idx)
	if err != nil {
		return nil, err
	}
	byPlatform := map[string]name.Digest{}
	for _, c := range all {
		if _, dup := byPlatform[c.Platform]; dup {
			return nil, fmt.Errorf("image index %s has two %s images", ref, c.Platform)
		}
		byPlatform[c.Platform] = c.Ref
	}
	want := l.PlatformNames()
	if len(byPlatform) != len(want) {
		return nil, fmt.Errorf("image index %s has %d images, the lock of %s has platforms %s", ref, len(byPlatform), l.Name, strings.Join(want, ", "))
	}
	var cs []Child
	for _, p := range want {
		d, ok := byPlatform[p]
		if !ok {
			return nil, fmt.Errorf("image index %s has no %s image (the lock of %s has platforms %s)", ref, p, l.Name, strings.Join(want, ", "))
		}
		cs = append(cs, Child{Platform: p, Ref: d})
	}
	return cs, nil
}

// IndexImages lists the images of idx, the image index at ref, in the
// index's order, each named by its platform as the lock names platforms
// (lock.PlatformName). An entry without a platform is an error: every
// image of a build's index is one platform's.
func IndexImages(ref name.Digest, idx v1.ImageIndex) ([]Child, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the image index %s: %w", ref, err)
	}
	cs := make([]Child, 0, len(im.Manifests))
	for _, m := range im.Manifests {
		if m.Platform == nil {
			return nil, fmt.Errorf("image index %s: manifest %s has no platform", ref, m.Digest)
		}
		cs = append(cs, Child{Platform: lock.PlatformName(m.Platform), Ref: ref.Context().Digest(m.Digest.String())})
	}
	return cs, nil
}

// signAndAttestImage signs one single-platform image built from view (the
// lock l itself, or one platform's view of it) and writes what it lacks of
// its lock attestation (the whole lock file l), its SBOMs (SPDX and
// CycloneDX, of one inventory, read only when one of them is needed) and
// its provenance.
func signAndAttestImage(ctx context.Context, ref name.Digest, l, view *lock.Lock, b Builder, o *options, opts []Option) error {
	lp, err := LockPredicate(l)
	if err != nil {
		return err
	}
	sv, err := LoadSigner(ctx, opts...)
	if err != nil {
		return err
	}
	opts = append(opts, WithSigner(sv))
	var inv *sbom.Inventory
	inventory := func() (*sbom.Inventory, error) {
		if inv != nil {
			return inv, nil
		}
		img, err := remote.Image(ref, o.remoteOptions(ctx)...)
		if err != nil {
			return nil, fmt.Errorf("reading %s for its SBOM: %w", ref, err)
		}
		if inv, err = sbom.Read(ctx, img, view); err != nil {
			return nil, fmt.Errorf("listing the packages of %s: %w", ref, err)
		}
		return inv, nil
	}
	return complete(ctx, ref, Required(SigningKey, false), lp, sv, o, opts, func(typ string) ([]byte, error) {
		switch typ {
		case LockPredicateType:
			return lp, nil
		case ProvenancePredicateType:
			return provenance(l, view.Base, b)
		case SPDXPredicateType, CycloneDXPredicateType:
			inv, err := inventory()
			if err != nil {
				return nil, err
			}
			if typ == SPDXPredicateType {
				return sbom.SPDX(inv, ref, view)
			}
			return sbom.CycloneDX(inv, ref, view)
		}
		return nil, fmt.Errorf("no %s attestation for an image", typ)
	})
}
