package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	testresult "github.com/in-toto/attestation/go/predicates/test_result/v0"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestResultPredicateType is the in-toto test-result predicate type: the
// verification result in the standard shape that stock admission policies
// (sigstore policy-controller, Kyverno) read. Attest writes it beside the
// PredicateType attestation, signed by the same key.
const TestResultPredicateType = "https://in-toto.io/attestation/test-result/v0.1"

// The test-result predicate's result values (in-toto test-result v0.1).
const (
	TestResultPassed = "PASSED"
	TestResultFailed = "FAILED"
)

// TestResult returns r as an in-toto test-result v0.1 predicate (the
// in-toto attestation bindings' type): result PASSED when r passed, else
// FAILED; every check by name in passedTests, failedTests or warnedTests
// (a skipped check: it neither passed nor failed); configuration the lock
// r was checked against, by its digest.
func (r *Result) TestResult() ([]byte, error) {
	tr := &testresult.TestResult{Result: TestResultFailed}
	if r.Passed {
		tr.Result = TestResultPassed
	}
	for _, c := range r.Checks {
		switch c.Status {
		case Pass:
			tr.PassedTests = append(tr.PassedTests, c.Name)
		case Fail:
			tr.FailedTests = append(tr.FailedTests, c.Name)
		default:
			tr.WarnedTests = append(tr.WarnedTests, c.Name)
		}
	}
	return MarshalTestResult(tr, r.Digest, r.LockDigest)
}

// MarshalTestResult sets tr's configuration to the lock lockDigest (none
// when "") and encodes it compactly; what names the subject in errors.
func MarshalTestResult(tr *testresult.TestResult, what, lockDigest string) ([]byte, error) {
	if lockDigest != "" {
		alg, hex, ok := strings.Cut(lockDigest, ":")
		lock := &intoto.ResourceDescriptor{Name: "lock", Digest: map[string]string{alg: hex}}
		if err := lock.Validate(); !ok || err != nil {
			return nil, fmt.Errorf("test-result predicate of %s: lock digest %q is not algorithm:hex", what, lockDigest)
		}
		tr.Configuration = []*intoto.ResourceDescriptor{lock}
	}
	b, err := protojson.Marshal(tr)
	if err != nil {
		return nil, fmt.Errorf("test-result predicate of %s: %w", what, err)
	}
	// protojson varies its whitespace on purpose: compact it so that the
	// same result always gives the same bytes.
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
