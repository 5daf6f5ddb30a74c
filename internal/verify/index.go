package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	testresult "github.com/in-toto/attestation/go/predicates/test_result/v0"

	"imagectl/internal/lock"
	"imagectl/internal/sign"
	"imagectl/internal/verify/result"
)

// UnverifiedPlatformsError: AttestIndex found platform images of the
// index without a passing verification by the verifier key, so it wrote
// nothing.
type UnverifiedPlatformsError struct {
	Index name.Digest
	// Missing are "os/arch sha256:...: why" of each unverified image.
	Missing []string
}

func (e *UnverifiedPlatformsError) Error() string {
	return fmt.Sprintf("image index %s: not every platform image has a passing verification: %s", e.Index, strings.Join(e.Missing, "; "))
}

// AttestIndex writes the in-toto test-result attestation (result PASSED)
// on the image index index built from l, signed with opts (the verifier
// key), when every platform image of the index carries a passing
// verification (PredicateType) of exactly that image against l, signed by
// the key in verifierPub. Admission engines (policy-controller, Kyverno)
// check the digest a pod names and never descend into an index, so this is
// what lets a pod name the index. The predicate lists each platform image
// ("linux/amd64 sha256:...") in passedTests and the lock in
// configuration. A platform image without such a verification is an
// *UnverifiedPlatformsError, and nothing is written: a skipped platform
// never makes the index PASSED.
func AttestIndex(ctx context.Context, index name.Digest, l *lock.Lock, verifierPub string, opts ...sign.Option) error {
	children, err := sign.Children(ctx, index, l, opts...)
	if err != nil {
		return err
	}
	tr := &testresult.TestResult{Result: TestResultPassed}
	var missing []string
	for _, c := range children {
		what := c.Platform + " " + c.Ref.DigestStr()
		why, err := passedOn(ctx, c.Ref, l, verifierPub, opts)
		if err != nil {
			return err
		}
		if why != "" {
			missing = append(missing, what+": "+why)
			continue
		}
		tr.PassedTests = append(tr.PassedTests, what)
	}
	if len(missing) > 0 {
		return &UnverifiedPlatformsError{Index: index, Missing: missing}
	}
	pred, err := result.MarshalTestResult(tr, index.DigestStr(), l.Digest)
	if err != nil {
		return err
	}
	if err := sign.Attest(ctx, index, TestResultPredicateType, pred, opts...); err != nil {
		return fmt.Errorf("signing the test-result attestation of the image index %s: %w", index, err)
	}
	return nil
}

// passedOn is "" when ref carries a passing verification of exactly ref
// against l signed by the key in pub, else why not.
func passedOn(ctx context.Context, ref name.Digest, l *lock.Lock, pub string, opts []sign.Option) (string, error) {
	preds, err := sign.VerifyAttestations(ctx, ref, PredicateType, pub, opts...)
	var none *sign.NoAttestationError
	if errors.As(err, &none) {
		return "no verification by the verifier key", nil
	}
	if err != nil {
		return "", err
	}
	why := "no passing verification"
	for _, p := range preds {
		var r Result
		switch {
		case json.Unmarshal(p, &r) != nil:
			why = "a verification that is not a result"
		case r.Digest != ref.DigestStr():
			why = "a verification of " + r.Digest
		case r.LockDigest != l.Digest:
			why = fmt.Sprintf("verified against lock %s, not %s", r.LockDigest, l.Digest)
		case !r.Passed:
			why = "verification failed"
		default:
			return "", nil
		}
	}
	return why, nil
}
