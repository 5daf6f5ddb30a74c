package scan

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/scan/report"
	"imagectl/internal/sign"
)

// VulnPredicateType is cosign's vulnerability scan predicate
// (cosign attest/verify-attestation --type vuln).
const VulnPredicateType = report.VulnPredicateType

// Attest signs r as a vuln attestation of ref (replacing an earlier one
// of the same type), with the signer options of package sign.
func Attest(ctx context.Context, ref name.Digest, r *Result, opts ...sign.Option) error {
	pred, err := report.Predicate(r)
	if err != nil {
		return err
	}
	return sign.Attest(ctx, ref, VulnPredicateType, pred, opts...)
}
