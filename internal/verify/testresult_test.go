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
