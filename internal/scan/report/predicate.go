package report

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/cosign/attestation"

	"imagectl/internal/sign"
)

// VulnPredicateType is cosign's vulnerability scan predicate
// (cosign attest/verify-attestation --type vuln).
const VulnPredicateType = attestation.CosignVulnProvenanceV01

// InvocationURI names imagectl's scan in the predicate's invocation.
const InvocationURI = "https://imagectl.dev/scan/v1"

// Predicate returns r as cosign's vuln predicate: scanner uri and
// version, db uri and version, the result (r itself), and
// scanStartedOn/scanFinishedOn.
func Predicate(r *Result) ([]byte, error) {
	p := attestation.CosignVulnPredicate{
		Invocation: attestation.Invocation{URI: InvocationURI, Parameters: map[string]any{"image": r.Image, "db": r.DB.URI}},
		Scanner: attestation.Scanner{
			URI:     r.Scanner.URI,
			Version: r.Scanner.Version,
			DB:      attestation.DB{URI: r.DB.URI, Version: r.DB.Version},
			Result:  r,
		},
		Metadata: attestation.Metadata{ScanStartedOn: r.StartedOn, ScanFinishedOn: r.FinishedOn},
	}
	return json.Marshal(p)
}

// ParsePredicate reads a vuln predicate that Predicate wrote.
func ParsePredicate(b []byte) (*Result, error) {
	var p struct {
		Scanner struct {
			Result *Result `json:"result"`
		} `json:"scanner"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("reading the vuln predicate: %w", err)
	}
	if p.Scanner.Result == nil {
		return nil, fmt.Errorf("the vuln predicate has no imagectl scan result")
	}
	return p.Scanner.Result, nil
}

// Latest returns the newest vuln attestation result of ref that the key
// in pubKeyPath signed, for ref's digest. None is a
// *sign.NoAttestationError.
func Latest(ctx context.Context, ref name.Digest, pubKeyPath string, opts ...sign.Option) (*Result, error) {
	preds, err := sign.VerifyAttestations(ctx, ref, VulnPredicateType, pubKeyPath, opts...)
	if err != nil {
		return nil, err
	}
	var best *Result
	for _, b := range preds {
		r, err := ParsePredicate(b)
		if err != nil {
			return nil, fmt.Errorf("vuln attestation of %s: %w", ref, err)
		}
		if best == nil || r.FinishedOn.After(best.FinishedOn) {
			best = r
		}
	}
	return best, nil
}
