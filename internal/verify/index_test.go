package verify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/lock"
	"imagectl/internal/sign"
)

// TestAttestIndex: the index gets its PASSED test-result (by the verifier
// key, both platform images listed, the lock as configuration) only once
// every platform image carries a passing verification of itself against
// the lock by that key; before, an *UnverifiedPlatformsError names the
// image missing one and nothing is written. A failed verification, one of
// another lock, or one signed by another key does not count.
func TestAttestIndex(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	priv, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	otherPriv, _, err := sign.GenerateKeyPair(t.TempDir(), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	l := &lock.Lock{Name: "demo", Base: lock.Base{Platform: "linux/amd64"}, Platforms: []lock.Resolution{{Platform: "linux/arm64"}},
		Digest: "sha256:" + strings.Repeat("4", 64)}
	idx := mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json")
	repo := strings.TrimPrefix(srv.URL, "http://") + "/demo"
	children := map[string]name.Digest{}
	for _, a := range []string{"amd64", "arm64"} {
		img, _ := random.Image(256, 1)
		d, _ := img.Digest()
		children["linux/"+a], _ = name.NewDigest(repo + "@" + d.String())
		if err := remote.Write(children["linux/"+a], img); err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	h, _ := idx.Digest()
	ref, _ := name.NewDigest(repo + "@" + h.String())
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	attest := func(c name.Digest, passed bool, lockDigest, key string) {
		t.Helper()
		b, _ := json.Marshal(Result{Image: c.String(), Digest: c.DigestStr(), LockDigest: lockDigest, Passed: passed})
		if err := sign.Attest(ctx, c, PredicateType, b, sign.WithKey(key, []byte("pw"))); err != nil {
			t.Fatal(err)
		}
	}
	amd, arm := children["linux/amd64"], children["linux/arm64"]
	vopts := sign.WithKey(priv, []byte("pw"))

	attest(amd, true, l.Digest, priv)
	for _, tc := range []struct {
		name string
		arm  func()
		why  string
	}{
		{"arm64 never verified", func() {}, "no verification by the verifier key"},
		{"arm64 verified by another key", func() { attest(arm, true, l.Digest, otherPriv) }, "no verification by the verifier key"},
		{"arm64 failed", func() { attest(arm, false, l.Digest, priv) }, "verification failed"},
		{"arm64 verified against another lock", func() { attest(arm, true, "sha256:"+strings.Repeat("5", 64), priv) }, "verified against lock sha256:5555"},
	} {
		tc.arm()
		err := AttestIndex(ctx, ref, l, pub, vopts)
		var uv *UnverifiedPlatformsError
		if !errors.As(err, &uv) || len(uv.Missing) != 1 || !strings.Contains(uv.Missing[0], "linux/arm64 "+arm.DigestStr()+": "+tc.why) {
			t.Fatalf("%s: AttestIndex = %v, want an *UnverifiedPlatformsError naming linux/arm64: %s", tc.name, err, tc.why)
		}
		var none *sign.NoAttestationError
		if _, err := sign.VerifyAttestations(ctx, ref, TestResultPredicateType, pub); !errors.As(err, &none) {
			t.Fatalf("%s: the index has a test-result attestation (%v), want none", tc.name, err)
		}
	}

	attest(arm, true, l.Digest, priv)
	if err := AttestIndex(ctx, ref, l, pub, vopts); err != nil {
		t.Fatalf("AttestIndex(both verified) = %v", err)
	}
	preds, err := sign.VerifyAttestations(ctx, ref, TestResultPredicateType, pub)
	if err != nil || len(preds) != 1 {
		t.Fatalf("the index's test-result attestation: %d, %v", len(preds), err)
	}
	var got testResult
	if err := json.Unmarshal(preds[0], &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"linux/amd64 " + amd.DigestStr(), "linux/arm64 " + arm.DigestStr()}
	if got.Result != TestResultPassed || strings.Join(got.PassedTests, ",") != strings.Join(want, ",") ||
		len(got.Configuration) != 1 || got.Configuration[0].Digest["sha256"] != strings.Repeat("4", 64) {
		t.Errorf("the index's test result = %+v, want PASSED listing %v with the lock", got, want)
	}
}
