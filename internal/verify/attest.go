package verify

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/sign"
)

// Attest signs res as an in-toto attestation of type PredicateType on ref,
// the image it verified (cosign's tag scheme; `cosign verify-attestation
// --type` reads it), and, with the same key, as the standard in-toto
// test-result attestation (TestResultPredicateType, Result.TestResult) that
// admission policies read. A failed result is signed too: promotion reads
// Passed, admission policies the test result's FAILED.
// It refuses a result that Result.Signable refuses: one bound to another
// digest, or one that nothing shows ran inside this digest (an in-place
// run without the init's fingerprint naming it, a Job log without it, a
// podman run of an oci: layout).
// Both predicates are made before either is written: a result whose test
// result cannot be encoded (a malformed LockDigest) leaves ref unattested.
func Attest(ctx context.Context, ref name.Digest, res *Result, opts ...sign.Option) error {
	tr, err := signableTestResult(ref, res)
	if err != nil {
		return err
	}
	pred, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encoding the verification result: %w", err)
	}
	sv, err := sign.LoadSigner(ctx, opts...)
	if err != nil {
		return err
	}
	opts = append(opts, sign.WithSigner(sv))
	if err := sign.Attest(ctx, ref, PredicateType, pred, opts...); err != nil {
		return fmt.Errorf("signing the verification result of %s: %w", ref, err)
	}
	return attestTestResult(ctx, ref, tr, opts...)
}
