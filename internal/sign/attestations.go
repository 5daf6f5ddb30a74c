package sign

import "imagectl/internal/verify/result"

// Key names the key that signs an attestation.
type Key string

const (
	// SigningKey is the release's signing key (cosign.key): it signs the
	// digest and writes the build attestations.
	SigningKey Key = "signing"
	// VerifierKey is the GPU verifier's key: it signs what the verify
	// stage found.
	VerifierKey Key = "verifier"
)

// VerificationPredicateType: the predicate is a verification result
// (result.Result of internal/verify/result, whose PredicateType it is), signed by the
// verifier key.
const VerificationPredicateType = result.PredicateType

// TestResultPredicateType: the in-toto test-result v0.1 predicate of the
// same verification (verify.Result.TestResult), signed by the verifier
// key: what stock admission policies read.
const TestResultPredicateType = result.TestResultPredicateType

// Attestation is one attestation that every released digest carries.
type Attestation struct {
	// Name is what messages call it: "lock", "SPDX SBOM", ...
	Name          string
	PredicateType string
	// Key is the key that signs it.
	Key Key
	// OnIndex: an image index carries it itself. Every single-platform
	// image, and every platform's image inside an index, carries every
	// attestation.
	OnIndex bool
}

// ReleaseAttestations is the complete set of attestations a release writes
// on a digest, in the order they are written: the one list that
// SignAndAttest writes from, a resumed release checks (each one verified)
// and promotion's gate requires. A digest missing any of them, or its
// signature, is never promoted.
var ReleaseAttestations = []Attestation{
	{Name: "lock", PredicateType: LockPredicateType, Key: SigningKey, OnIndex: true},
	{Name: "SPDX SBOM", PredicateType: SPDXPredicateType, Key: SigningKey},
	{Name: "CycloneDX SBOM", PredicateType: CycloneDXPredicateType, Key: SigningKey},
	{Name: "provenance", PredicateType: ProvenancePredicateType, Key: SigningKey, OnIndex: true},
	{Name: "verification", PredicateType: VerificationPredicateType, Key: VerifierKey},
	{Name: "test result", PredicateType: TestResultPredicateType, Key: VerifierKey},
}

// Required returns the attestations of ReleaseAttestations that key k
// signs on a single-platform image (index false) or on an image index
// itself (index true), in the order they are written.
func Required(k Key, index bool) []Attestation {
	var out []Attestation
	for _, a := range ReleaseAttestations {
		if a.Key == k && (!index || a.OnIndex) {
			out = append(out, a)
		}
	}
	return out
}
