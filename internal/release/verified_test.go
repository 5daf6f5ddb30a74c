package release

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/lock"
	"imagectl/internal/sign"
	"imagectl/internal/verify"
)

// TestVerifiedWritesAMissingTestResult: a digest whose passing
// verification was signed but not its in-toto test result (a run stopped
// between verify.Attest's two writes, or signed before the test result was
// part of sign.ReleaseAttestations) counts as verified, and Verified
// writes the test result from the found result, once: no second
// verification, no second test result on the next call. A digest with no
// verification is not verified, and gets nothing written.
func TestVerifiedWritesAMissingTestResult(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://")
	push := func(repo string) name.Digest {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		dg, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		d, err := name.NewDigest(reg + "/" + repo + "@" + dg.String())
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(d, img); err != nil {
			t.Fatal(err)
		}
		return d
	}
	keys := newE2EKeys(t, t.TempDir())
	l := &lock.Lock{Name: "demo", Digest: "sha256:" + strings.Repeat("ab", 32)}
	r, err := NewReal(Config{
		ImagesDir:           t.TempDir(),
		Buildkit:            fakeBuildkit{},
		PublicKey:           keys.signPub,
		VerifierPublicKey:   keys.verPub,
		VerifierSignOptions: []sign.Option{sign.WithKey(keys.verKey, e2ePassword)},
		VerifyRuntime:       func(*lock.Lock, name.Digest) (verify.Runtime, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func(d name.Digest, typ string) int {
		preds, err := sign.VerifyAttestations(ctx, d, typ, keys.verPub)
		if err != nil {
			return 0
		}
		return len(preds)
	}

	d := push("demo/half-verified")
	res := verify.Result{Image: d.String(), Digest: d.DigestStr(), LockDigest: l.Digest, Runtime: "containerd", Proof: verify.ProofRuntime, Passed: true,
		Checks: []verify.Check{{Name: "torch.cuda", Status: verify.Pass}}}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := sign.Attest(ctx, d, verify.PredicateType, b, sign.WithKey(keys.verKey, e2ePassword)); err != nil {
		t.Fatal(err)
	}
	for call := 1; call <= 2; call++ {
		got, err := r.Verified(ctx, l, d)
		if err != nil || got == nil || !got.Passed || got.Digest != d.DigestStr() {
			t.Fatalf("Verified() call %d with the verification but no test result = %+v, %v; want the passing result", call, got, err)
		}
		if n := count(d, verify.TestResultPredicateType); n != 1 {
			t.Errorf("after Verified() call %d: %d test-result attestations, want 1", call, n)
		}
		if n := count(d, verify.PredicateType); n != 1 {
			t.Errorf("after Verified() call %d: %d verification attestations, want the 1 that was there", call, n)
		}
	}
	preds, err := sign.VerifyAttestations(ctx, d, verify.TestResultPredicateType, keys.verPub)
	if err != nil || len(preds) != 1 || !strings.Contains(string(preds[0]), `"result":"PASSED"`) {
		t.Errorf("the written test result = %q, %v; want one saying PASSED", preds, err)
	}

	none := push("demo/unverified")
	if got, err := r.Verified(ctx, l, none); err != nil || got != nil {
		t.Errorf("Verified(no verification) = %+v, %v; want nil, nil", got, err)
	}
	if n := count(none, verify.TestResultPredicateType); n != 0 {
		t.Errorf("Verified(no verification) wrote %d test results, want none", n)
	}
}
