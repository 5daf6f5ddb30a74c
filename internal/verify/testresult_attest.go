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
	tr, err := signableTestResult(ref, res)
	if err != nil {
		return err
	}
	return attestTestResult(ctx, ref, tr, opts...)
}

// signableTestResult is res's test-result predicate (Result.TestResult)
// when Result.Signable lets res be signed for ref: what Attest and
// AttestTestResult check and encode before they write anything.
func signableTestResult(ref name.Digest, res *Result) ([]byte, error) {
	if err := res.Signable(ref.DigestStr()); err != nil {
		return nil, err
	}
	return res.TestResult()
}

// attestTestResult writes tr, a predicate of signableTestResult, as the
// test-result attestation of ref: Attest's second write, AttestTestResult's
// only one.
func attestTestResult(ctx context.Context, ref name.Digest, tr []byte, opts ...sign.Option) error {
	if err := sign.Attest(ctx, ref, TestResultPredicateType, tr, opts...); err != nil {
		return fmt.Errorf("signing the test-result attestation of %s: %w", ref, err)
	}
	return nil
}
