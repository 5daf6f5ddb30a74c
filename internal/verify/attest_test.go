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
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/sign"
)

func TestAttest(t *testing.T) {
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer s.Close()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewDigest(strings.TrimPrefix(s.URL, "http://") + "/pytorch@" + h.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	priv, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Image: ref.String(), Digest: ref.DigestStr(), LockDigest: "sha256:" + strings.Repeat("1", 64), Runtime: "containerd",
		Proof: ProofRuntime, Passed: true, Checks: []Check{{Name: "nccl.allreduce.busbw", Status: Pass, Value: "298.2 GB/s"}},
		Host: h200s(2), StartedAt: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), Duration: "33s"}
	ctx := context.Background()
	if err := Attest(ctx, ref, res, sign.WithKey(priv, []byte("pw"))); err != nil {
		t.Fatalf("Attest() error = %v", err)
	}
	preds, err := sign.VerifyAttestations(ctx, ref, PredicateType, pub)
	if err != nil {
		t.Fatalf("VerifyAttestations() error = %v", err)
	}
	var got Result
	if err := json.Unmarshal(preds[0], &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(*res, got); d != "" {
		t.Errorf("attested predicate differs from the result (-want +got):\n%s", d)
	}

	other := *res
	other.Digest = "sha256:" + strings.Repeat("f", 64)
	if err := Attest(ctx, ref, &other, sign.WithKey(priv, []byte("pw"))); err == nil {
		t.Errorf("Attest() of a result for another digest = nil, want an error")
	}

	// An in-place run that nothing ties to the digest is reported, not signed.
	unbound := *res
	unbound.Runtime, unbound.Proof = "in-place", ""
	var ue *UnsignableError
	if err := Attest(ctx, ref, &unbound, sign.WithKey(priv, []byte("pw"))); !errors.As(err, &ue) {
		t.Errorf("Attest() of an unproven in-place result = %v, want *UnsignableError", err)
	}
}
