package verify

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/sign"
)

// testResult is the in-toto test-result v0.1 predicate as its
// specification spells it (camelCase JSON), read independently of the
// bindings that wrote it.
type testResult struct {
	Result        string   `json:"result"`
	PassedTests   []string `json:"passedTests"`
	FailedTests   []string `json:"failedTests"`
	WarnedTests   []string `json:"warnedTests"`
	Configuration []struct {
		Name   string            `json:"name"`
		Digest map[string]string `json:"digest"`
	} `json:"configuration"`
}

func TestTestResult(t *testing.T) {
	lockDigest := "sha256:" + strings.Repeat("1", 64)
	checks := []Check{
		{Name: "torch.cuda", Status: Pass},
		{Name: "nccl.allreduce.busbw", Status: Fail, Value: "12 GB/s", Threshold: ">= 200 GB/s"},
		{Name: "nvlink.topology", Status: Skip, Detail: "one GPU"},
		{Name: "init.fingerprint", Status: Pass},
	}
	for _, tc := range []struct {
		name   string
		passed bool
		checks []Check
		want   testResult
	}{
		{"failed", false, checks, testResult{Result: "FAILED", PassedTests: []string{"torch.cuda", "init.fingerprint"},
			FailedTests: []string{"nccl.allreduce.busbw"}, WarnedTests: []string{"nvlink.topology"}}},
		{"passed", true, []Check{checks[0], checks[2]}, testResult{Result: "PASSED", PassedTests: []string{"torch.cuda"},
			WarnedTests: []string{"nvlink.topology"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Digest: "sha256:" + strings.Repeat("a", 64), LockDigest: lockDigest, Passed: tc.passed, Checks: tc.checks}
			b, err := r.TestResult()
			if err != nil {
				t.Fatalf("TestResult() error = %v", err)
			}
			var got testResult
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("TestResult() = %s: %v", b, err)
			}
			tc.want.Configuration = got.Configuration
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("TestResult() differs (-want +got):\n%s", d)
			}
			if len(got.Configuration) != 1 || got.Configuration[0].Name != "lock" || got.Configuration[0].Digest["sha256"] != strings.Repeat("1", 64) {
				t.Errorf("TestResult() configuration = %+v, want the lock by its digest %s", got.Configuration, lockDigest)
			}
			again, _ := r.TestResult()
			if string(again) != string(b) {
				t.Errorf("TestResult() is not stable:\n%s\n%s", b, again)
			}
		})
	}
	if _, err := (&Result{LockDigest: "not-a-digest"}).TestResult(); err == nil {
		t.Error("TestResult() with a malformed lock digest = nil error, want one")
	}
}

// pushRandomImage pushes a random image to pytorch on the registry s and
// returns its digest.
func pushRandomImage(t *testing.T, s *httptest.Server) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	ref, err := name.NewDigest(strings.TrimPrefix(s.URL, "http://") + "/pytorch@" + h.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestAttestTestResult: Attest writes the test-result attestation beside
// imagectl's own, under the same key, bound to the digest, PASSED or FAILED.
func TestAttestTestResult(t *testing.T) {
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer s.Close()
	ctx := context.Background()
	priv, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	_, otherPub, err := sign.GenerateKeyPair(t.TempDir(), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	for _, passed := range []bool{true, false} {
		ref := pushRandomImage(t, s)
		res := &Result{Image: ref.String(), Digest: ref.DigestStr(), LockDigest: "sha256:" + strings.Repeat("2", 64), Runtime: "containerd",
			Proof: ProofRuntime, Passed: passed, Checks: []Check{{Name: "torch.cuda", Status: map[bool]Status{true: Pass, false: Fail}[passed]}},
			StartedAt: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), Duration: "3s"}
		if err := Attest(ctx, ref, res, sign.WithKey(priv, []byte("pw"))); err != nil {
			t.Fatalf("Attest() error = %v", err)
		}
		preds, err := sign.VerifyAttestations(ctx, ref, TestResultPredicateType, pub)
		if err != nil {
			t.Fatalf("VerifyAttestations(%s) error = %v", TestResultPredicateType, err)
		}
		var got testResult
		if err := json.Unmarshal(preds[0], &got); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "PASSED", false: "FAILED"}[passed]
		if len(preds) != 1 || got.Result != want {
			t.Errorf("passed=%v: %d test-result attestations, result %q; want one, %q", passed, len(preds), got.Result, want)
		}
		if _, err := sign.VerifyAttestations(ctx, ref, PredicateType, pub); err != nil {
			t.Errorf("passed=%v: imagectl's own verification attestation: %v", passed, err)
		}
		if _, err := sign.VerifyAttestations(ctx, ref, TestResultPredicateType, otherPub); err == nil {
			t.Errorf("passed=%v: the test-result attestation verified under another key", passed)
		}
	}
}

// AttestTestResult writes the test-result attestation alone, with the very
// predicate Attest writes (Result.TestResult), and refuses what Attest
// refuses; Attest writes nothing for a result whose test result cannot be
// encoded.
func TestAttestTestResultAlone(t *testing.T) {
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer s.Close()
	ctx := context.Background()
	priv, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	key := sign.WithKey(priv, []byte("pw"))
	push := func() name.Digest { return pushRandomImage(t, s) }
	result := func(ref name.Digest) *Result {
		return &Result{Image: ref.String(), Digest: ref.DigestStr(), LockDigest: "sha256:" + strings.Repeat("3", 64), Runtime: "containerd",
			Proof: ProofRuntime, Passed: true, Checks: []Check{{Name: "torch.cuda", Status: Pass}, {Name: "nccl.allreduce.busbw", Status: Skip}},
			StartedAt: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), Duration: "3s"}
	}
	predicate := func(ref name.Digest, typ string) []byte {
		t.Helper()
		preds, err := sign.VerifyAttestations(ctx, ref, typ, pub)
		if err != nil {
			t.Fatalf("VerifyAttestations(%s) error = %v", typ, err)
		}
		if len(preds) != 1 {
			t.Fatalf("%d %s attestations, want 1", len(preds), typ)
		}
		return preds[0]
	}

	attested, alone := push(), push()
	if err := Attest(ctx, attested, result(attested), key); err != nil {
		t.Fatalf("Attest() error = %v", err)
	}
	res := result(alone)
	if err := AttestTestResult(ctx, alone, res, key); err != nil {
		t.Fatalf("AttestTestResult() error = %v", err)
	}
	want, err := res.TestResult()
	if err != nil {
		t.Fatal(err)
	}
	got, fromAttest := predicate(alone, TestResultPredicateType), predicate(attested, TestResultPredicateType)
	if string(got) != string(fromAttest) {
		t.Errorf("AttestTestResult predicate = %s, Attest's = %s, want the same bytes", got, fromAttest)
	}
	// The statement re-encodes the predicate (sorted keys): compare values.
	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantV, gotV); d != "" {
		t.Errorf("AttestTestResult predicate is not Result.TestResult (-want +got):\n%s", d)
	}
	if _, err := sign.VerifyAttestations(ctx, alone, PredicateType, pub); !sign.Absent(err) {
		t.Errorf("AttestTestResult wrote imagectl's own attestation too (VerifyAttestations error = %v, want absent)", err)
	}

	// Refused, and nothing written: a result of another digest (to
	// AttestTestResult) and a malformed lock digest (to Attest, which
	// encodes both predicates before it writes the first).
	other := push()
	if err := AttestTestResult(ctx, other, res, key); err == nil {
		t.Errorf("AttestTestResult() of a result for another digest = nil, want an error")
	}
	bad := result(other)
	bad.LockDigest = "not-a-digest"
	if err := Attest(ctx, other, bad, key); err == nil || !strings.Contains(err.Error(), "not-a-digest") {
		t.Errorf("Attest() with lock digest %q = %v, want an error naming it", bad.LockDigest, err)
	}
	for _, typ := range []string{PredicateType, TestResultPredicateType} {
		if _, err := sign.VerifyAttestations(ctx, other, typ, pub); !sign.Absent(err) {
			t.Errorf("%s attestation of a refused result: VerifyAttestations error = %v, want absent", typ, err)
		}
	}
}
