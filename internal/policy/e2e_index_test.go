package policy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/policy"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

// index pushes a two-platform image index (linux/amd64, linux/arm64) of
// small random images and returns it with its images.
func (r *release) index() (name.Digest, []name.Digest) {
	r.t.Helper()
	idx := mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json")
	var children []name.Digest
	for _, a := range []string{"amd64", "arm64"} {
		img, err := random.Image(1024, 1)
		if err != nil {
			r.t.Fatal(err)
		}
		h, _ := img.Digest()
		d, err := name.NewDigest(r.repo + "@" + h.String())
		if err != nil {
			r.t.Fatal(err)
		}
		if err := remote.Write(d, img, r.access.RemoteOptions()...); err != nil {
			r.t.Fatal(err)
		}
		children = append(children, d)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	h, _ := idx.Digest()
	d, err := name.NewDigest(r.repo + "@" + h.String())
	if err != nil {
		r.t.Fatal(err)
	}
	if err := remote.WriteIndex(d, idx, r.access.RemoteOptions()...); err != nil {
		r.t.Fatal(err)
	}
	return d, children
}

// TestEnginesAdmitVerifiedIndex: both engines check the digest a pod
// names and never look inside an image index, so a signed index whose
// platform images are verified is refused until the verifier attests the
// index itself (verify.AttestIndex, which the release's promote stage
// runs): then both admit it. AttestIndex refuses to write while a platform
// image is unverified, so a partly verified index stays refused; each
// verified platform image is admitted by its own digest throughout.
func TestEnginesAdmitVerifiedIndex(t *testing.T) {
	tenv := testenv.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := &release{t: t, ctx: ctx, access: auth.Default(), signer: newKeyPair(t), verifier: newKeyPair(t),
		repo: fmt.Sprintf("%s/e2e-policy-index-%d/ml/pytorch", tenv.Registry, time.Now().UnixNano())}
	// The lock digest r.verified attests.
	l := &lock.Lock{Name: "pytorch", Base: lock.Base{Platform: "linux/amd64"}, Platforms: []lock.Resolution{{Platform: "linux/arm64"}},
		Digest: "sha256:" + strings.Repeat("3", 64)}
	idx, children := r.index()
	r.sign(idx, r.signer)
	for _, c := range children {
		r.sign(c, r.signer)
	}
	r.verified(children[0], r.verifier, true)

	es := engines(t, tenv, t.TempDir(), "")
	pols := map[policy.Format]string{}
	for _, e := range es {
		pols[e.format] = render(t, e.format, r.repo, r)
	}
	refusedUnattested := map[string][]string{
		"policy-tester": {"authority verification", "no matching attestations"},
		"kyverno":       {"image attestations verification failed", "no matching attestations"}}

	var uv *verify.UnverifiedPlatformsError
	if err := verify.AttestIndex(ctx, idx, l, r.verifier.pub, r.verifier.opts(r.access)...); !errors.As(err, &uv) {
		t.Fatalf("AttestIndex(arm64 unverified) = %v, want an *UnverifiedPlatformsError", err)
	}
	checkCases(t, es, pols, []admissionCase{
		{"index-arm64-unverified", idx, refusedUnattested},
		{"amd64-image", children[0], nil},
	})

	r.verified(children[1], r.verifier, true)
	checkCases(t, es, pols, []admissionCase{{"index-not-attested", idx, refusedUnattested}})

	if err := verify.AttestIndex(context.Background(), idx, l, r.verifier.pub, r.verifier.opts(r.access)...); err != nil {
		t.Fatalf("AttestIndex(both verified) = %v", err)
	}
	checkCases(t, es, pols, []admissionCase{
		{"index-attested", idx, nil},
		{"arm64-image", children[1], nil},
	})
}
