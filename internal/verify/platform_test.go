package verify

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/lock"
)

// A multi-platform lock is refused by Run, which verifies one platform's
// image with its view of the lock.
func TestRunRefusesMultiPlatformLock(t *testing.T) {
	l := &lock.Lock{Name: "demo", Base: lock.Base{Platform: "linux/amd64"}, Platforms: []lock.Resolution{{Platform: "linux/arm64"}}}
	_, err := Run(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") || !strings.Contains(err.Error(), "ForHost") {
		t.Fatalf("Run(two-platform lock) = %v, want an error naming both platforms and ForHost", err)
	}
}

// On an amd64 GPU host, verify of a two-platform index runs the amd64
// image with the amd64 view of the lock, binds the result to that image
// and reports linux/arm64 as not verified.
func TestForHostVerifiesHostPlatform(t *testing.T) {
	ctx := context.Background()
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	l.Base.Platform = "linux/amd64"
	arm := lock.Resolution{Platform: "linux/arm64", Base: l.Base, Python: l.Python, Resolver: l.Resolver, Apt: l.Apt, Pip: l.Pip}
	arm.Base.Platform = "linux/arm64"
	l.Platforms = []lock.Resolution{arm}
	if _, err := lock.Marshal(l); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	idx := mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json")
	digests := map[string]string{}
	for _, a := range []string{"amd64", "arm64"} {
		img, _ := random.Image(256, 1)
		d, _ := img.Digest()
		digests["linux/"+a] = d.String()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	h, _ := idx.Digest()
	ref, _ := name.NewDigest(strings.TrimPrefix(srv.URL, "http://") + "/pytorch@" + h.String())
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}

	tgt, err := ForHost(ctx, ref, l, "linux/amd64", nil)
	if err != nil {
		t.Fatalf("ForHost(linux/amd64) = %v", err)
	}
	if tgt.Image.DigestStr() != digests["linux/amd64"] || tgt.Lock.Base.Platform != "linux/amd64" || tgt.Lock.Platforms != nil {
		t.Fatalf("ForHost = image %s, lock platform %s; want the amd64 child %s and view", tgt.Image, tgt.Lock.Base.Platform, digests["linux/amd64"])
	}
	rt := &fakeRuntime{out: machine(t, tgt.Lock, 2)}
	res, err := Run(ctx, tgt.Lock, WithRuntime(rt), WithGPUProber(fakeProber{h: h200s(2)}), WithTarget(tgt))
	if err != nil {
		t.Fatalf("Run(amd64 target) = %v", err)
	}
	want := []PlatformStatus{
		{Platform: "linux/amd64", Digest: digests["linux/amd64"], Status: PlatformVerified},
		{Platform: "linux/arm64", Digest: digests["linux/arm64"], Status: PlatformNotVerified},
	}
	if d := cmp.Diff(want, res.Platforms); d != "" || res.Digest != digests["linux/amd64"] || res.Index != ref.String() {
		t.Errorf("Run(target) = digest %s index %s platforms (-want +got):\n%s", res.Digest, res.Index, d)
	}

	if _, err := ForHost(ctx, ref, l, "linux/s390x", nil); err == nil || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
		t.Errorf("ForHost(linux/s390x) = %v, want an error naming the platforms", err)
	}
	// Run given another lock than the target's view is refused.
	if _, err := Run(ctx, readLock(t, "testdata/h200-torch2.11-cu130.lock.json"), WithRuntime(rt), WithTarget(tgt)); err == nil {
		t.Errorf("Run(other lock, target) = nil error")
	}

	// SubjectOf: the index resolves to this host's platform's image (the
	// index has both, so on either kind of CI machine), bound by WithTarget.
	sub, err := SubjectOf(ctx, ref, l, nil)
	if err != nil {
		t.Fatalf("SubjectOf(index) = %v", err)
	}
	if sub.Target == nil || sub.Image.DigestStr() != digests[HostPlatform()] || sub.Lock.Base.Platform != HostPlatform() || len(sub.Options()) != 1 {
		t.Errorf("SubjectOf(index) = image %s, lock platform %s, target %v; want the %s child %s", sub.Image, sub.Lock.Base.Platform, sub.Target, HostPlatform(), digests[HostPlatform()])
	}
}

// SubjectOf a single-platform build is the image itself with its lock, and
// asks no registry.
func TestSubjectOfSinglePlatform(t *testing.T) {
	l := &lock.Lock{Name: "demo", Base: lock.Base{Platform: "linux/amd64"}}
	ref, _ := name.NewDigest("registry.invalid/demo@sha256:" + strings.Repeat("a", 64))
	sub, err := SubjectOf(context.Background(), ref, l, nil)
	if err != nil || sub.Image != ref || sub.Lock != l || sub.Target != nil {
		t.Fatalf("SubjectOf(single platform) = %+v, %v; want the image itself, its lock, no target", sub, err)
	}
	var o options
	for _, opt := range sub.Options() {
		if err := opt(&o); err != nil {
			t.Fatal(err)
		}
	}
	if o.image == nil || *o.image != ref || o.target != nil {
		t.Errorf("Options() bind %v (target %v), want WithImage(%s)", o.image, o.target, ref)
	}
}
