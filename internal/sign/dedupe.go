package sign

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/sigstore/pkg/signature"
)

// envelopeStatement returns the statement bytes inside a DSSE attestation
// layer.
func envelopeStatement(att oci.Signature) ([]byte, dsseEnvelope, error) {
	var env dsseEnvelope
	p, err := att.Payload()
	if err != nil {
		return nil, env, err
	}
	if err := json.Unmarshal(p, &env); err != nil {
		return nil, env, fmt.Errorf("attestation is not a DSSE envelope: %w", err)
	}
	st, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return nil, env, fmt.Errorf("attestation payload is not base64: %w", err)
	}
	return st, env, nil
}

type dsseEnvelope struct {
	PayloadType string `json:"payloadType"`
	Payload     string `json:"payload"`
	Signatures  []struct {
		KeyID string `json:"keyid"`
		Sig   string `json:"sig"`
	} `json:"signatures"`
}

// sameStatement finds an existing attestation carrying byte-identical
// statement bytes with a signature that verifies under verifier, so that
// attesting the same thing twice writes nothing new (ECDSA signatures differ
// every time, so cosign's layer-digest comparison never matches).
type sameStatement struct{ verifier signature.Verifier }

func (d *sameStatement) Find(existing oci.Signatures, newAtt oci.Signature) (oci.Signature, error) {
	want, _, err := envelopeStatement(newAtt)
	if err != nil {
		return nil, err
	}
	sl, err := existing.Get()
	if err != nil {
		return nil, err
	}
	for _, s := range sl {
		st, env, err := envelopeStatement(s)
		if err != nil || !bytes.Equal(st, want) {
			continue
		}
		for _, sig := range env.Signatures {
			raw, err := base64.StdEncoding.DecodeString(sig.Sig)
			if err != nil {
				continue
			}
			pae := dsse.PAE(env.PayloadType, st)
			if d.verifier.VerifySignature(bytes.NewReader(raw), bytes.NewReader(pae)) == nil {
				return s, nil
			}
		}
	}
	return nil, nil
}

// replaceType drops existing attestations of one predicate type, silently
// (cosign's own ReplaceOp prints to stderr).
type replaceType struct{ predicateType string }

func (r *replaceType) Replace(existing oci.Signatures, newAtt oci.Signature) (oci.Signatures, error) {
	sl, err := existing.Get()
	if err != nil {
		return nil, err
	}
	kept := []oci.Signature{newAtt}
	for _, s := range sl {
		st, _, err := envelopeStatement(s)
		if err == nil {
			var h struct {
				PredicateType string `json:"predicateType"`
			}
			if json.Unmarshal(st, &h) == nil && h.PredicateType == r.predicateType {
				continue
			}
		}
		kept = append(kept, s)
	}
	return &fixedSignatures{Signatures: existing, list: kept}, nil
}

type fixedSignatures struct {
	oci.Signatures
	list []oci.Signature
}

func (f *fixedSignatures) Get() ([]oci.Signature, error) { return f.list, nil }
