package verify

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/sign"
)

// AttestTestResult signs res, a result already attested on ref (Attest's
// first half), as the in-toto test-result attestation only: what a
// resumed release writes when a run stopped between Attest's two writes,
// or a verification predates the test result's place in
// sign.ReleaseAttestations, without running the checks again. It refuses
// what Attest refuses.
func AttestTestResult(ctx context.Context, ref name.Digest, res *Result, opts ...sign.Option) error {
	if err := res.Signable(ref.DigestStr()); err != nil {
		return err
	}
	tr, err := res.TestResult()
	if err != nil {
		return err
	}
	if err := sign.Attest(ctx, ref, TestResultPredicateType, tr, opts...); err != nil {
		return fmt.Errorf("signing the test-result attestation of %s: %w", ref, err)
	}
	return nil
}
