package mirror

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"imagectl/internal/exitcode"
	"imagectl/internal/spec"
)

func TestTarget(t *testing.T) {
	for _, tc := range []struct{ base, mirror, want string }{
		{"nvidia/cuda:12.1.1-runtime-ubuntu22.04", "reg.example:5000/platform/mirror", "reg.example:5000/platform/mirror/nvidia/cuda"},
		{"127.0.0.1:5100/nvidia/cuda:11.8.0-runtime-ubuntu22.04", "127.0.0.1:5000/m", "127.0.0.1:5000/m/nvidia/cuda"},
		{"ubuntu:22.04", "reg.example/m", "reg.example/m/library/ubuntu"},
		{"harbor.corp/dockerhub-proxy/nvidia/cuda:12.1.1-runtime-ubuntu22.04", "reg.example/m", "reg.example/m/dockerhub-proxy/nvidia/cuda"},
		{"nvcr.io/nvidia/cuda@sha256:" + strings.Repeat("a", 64), "reg.example/m", "reg.example/m/nvidia/cuda"},
	} {
		got, err := Target(tc.base, tc.mirror)
		if err != nil {
			t.Fatalf("Target(%q, %q): %v", tc.base, tc.mirror, err)
		}
		if got.Name() != tc.want {
			t.Errorf("Target(%q, %q) = %s, want %s", tc.base, tc.mirror, got.Name(), tc.want)
		}
	}
	if _, err := Target("nvidia/cuda:x", "Bad Mirror"); err == nil || !strings.Contains(err.Error(), "Bad Mirror") {
		t.Errorf("Target with a bad mirror = %v, want an error naming it", err)
	}
}

// writes counts, on the server side, every request that writes.
type writes struct {
	h  http.Handler
	mu sync.Mutex
	n  map[string]int
}

func (w *writes) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.mu.Lock()
		w.n[r.Method]++
		w.mu.Unlock()
	}
	w.h.ServeHTTP(rw, r)
}

func (w *writes) take() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.n
	w.n = map[string]int{}
	return n
}

func newRegistry(t *testing.T) (string, *writes) {
	t.Helper()
	w := &writes{h: registry.New(registry.Logger(log.New(io.Discard, "", 0))), n: map[string]int{}}
	srv := httptest.NewServer(w)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), w
}

func randomImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(4096, 2)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// multiArch is an OCI index shaped like nvidia/cuda's: one image per platform.
func multiArch(t *testing.T, imgs map[string]v1.Image) v1.ImageIndex {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		img, ok := imgs[p]
		if !ok {
			continue
		}
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	return idx
}

func blobBytes(t *testing.T, imgs ...v1.Image) (int, int64) {
	t.Helper()
	var n int
	var size int64
	for _, img := range imgs {
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			n++
			size += d.Size
		}
	}
	return n, size
}

func TestCopyIdempotent(t *testing.T) {
	ctx := context.Background()
	up, _ := newRegistry(t)
	dst, w := newRegistry(t)
	amd64, arm64 := randomImage(t), randomImage(t)
	idx := multiArch(t, map[string]v1.Image{"linux/amd64": amd64, "linux/arm64": arm64})
	src := up + "/nvidia/cuda:12.1.1-runtime-ubuntu22.04"
	srcRef, _ := name.ParseReference(src)
	if err := remote.WriteIndex(srcRef, idx); err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	repo, err := Target(src, dst+"/platform/mirror")
	if err != nil {
		t.Fatal(err)
	}

	r, err := Copy(ctx, src, repo)
	if err != nil {
		t.Fatalf("Copy(%s): %v", src, err)
	}
	blobs, size := blobBytes(t, amd64, arm64)
	wantFirst := Result{
		Source: src, Digest: want.String(), Target: repo.Name() + "@" + want.String(),
		Tag: repo.Name() + ":12.1.1-runtime-ubuntu22.04", Platforms: []string{"linux/amd64", "linux/arm64"},
		// Two platform manifests and the index by digest, then the tag.
		Uploaded: Uploads{Blobs: blobs, Bytes: size, Manifests: 4},
	}
	if d := cmp.Diff(wantFirst, r); d != "" {
		t.Errorf("first Copy (-want +got):\n%s", d)
	}
	if n := w.take(); n[http.MethodPut] == 0 {
		t.Errorf("first copy: the mirror saw writes %v, want blob and manifest PUTs", n)
	}
	// The copy is the upstream index, byte for byte, platforms included.
	got, err := remote.Index(repo.Digest(want.String()))
	if err != nil {
		t.Fatalf("the mirror lacks %s: %v", want, err)
	}
	for _, img := range []v1.Image{amd64, arm64} {
		d, _ := img.Digest()
		mimg, err := got.Image(d)
		if err != nil {
			t.Fatalf("mirrored index lacks %s: %v", d, err)
		}
		if _, err := mimg.Layers(); err != nil {
			t.Fatal(err)
		}
	}
	if td, err := remote.Head(repo.Tag("12.1.1-runtime-ubuntu22.04")); err != nil || td.Digest != want {
		t.Errorf("mirror tag = %v, %v; want %s", td, err, want)
	}

	// Again: nothing is uploaded, nothing written at all.
	r, err = Copy(ctx, src, repo)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Present || r.Uploaded != (Uploads{}) {
		t.Errorf("second Copy: present %v, uploaded %+v; want present and nothing uploaded", r.Present, r.Uploaded)
	}
	if n := w.take(); len(n) != 0 {
		t.Errorf("second copy: the mirror saw writes %v, want none", n)
	}

	// The upstream tag moves to an index that keeps the arm64 image: only
	// the new amd64 image is uploaded, and the tag follows.
	amd64b := randomImage(t)
	idx2 := multiArch(t, map[string]v1.Image{"linux/amd64": amd64b, "linux/arm64": arm64})
	if err := remote.WriteIndex(srcRef, idx2); err != nil {
		t.Fatal(err)
	}
	r, err = Copy(ctx, src, repo)
	if err != nil {
		t.Fatal(err)
	}
	blobs, size = blobBytes(t, amd64b)
	if r.Present || r.Uploaded.Blobs != blobs || r.Uploaded.Bytes != size {
		t.Errorf("after the tag moved: present %v, uploaded %+v; want %d blobs, %d bytes", r.Present, r.Uploaded, blobs, size)
	}
	want2, _ := idx2.Digest()
	if td, err := remote.Head(repo.Tag("12.1.1-runtime-ubuntu22.04")); err != nil || td.Digest != want2 {
		t.Errorf("mirror tag after the move = %v, %v; want %s", td, err, want2)
	}
	// The old digest stays in the mirror: locks pinned to it still build.
	if _, err := remote.Head(repo.Digest(want.String())); err != nil {
		t.Errorf("the old index %s left the mirror: %v", want, err)
	}
}

func TestCopyByDigestAndSingleManifest(t *testing.T) {
	ctx := context.Background()
	up, _ := newRegistry(t)
	dst, _ := newRegistry(t)
	img := randomImage(t)
	tagRef, _ := name.ParseReference(up + "/library/debian:bookworm")
	if err := remote.Write(tagRef, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	src := up + "/library/debian@" + d.String()
	repo, _ := Target(src, dst+"/m")
	r, err := Copy(ctx, src, repo)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tag != "" || r.Digest != d.String() || len(r.Platforms) != 1 || r.Uploaded.Manifests != 1 {
		t.Errorf("Copy(%s) = %+v, want digest %s, no tag, one platform, one manifest", src, r, d)
	}
	if _, err := remote.Image(repo.Digest(d.String())); err != nil {
		t.Errorf("mirror lacks %s: %v", d, err)
	}
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	up, _ := newRegistry(t)
	dst, _ := newRegistry(t)
	src := up + "/nvidia/cuda:11.8.0-runtime-ubuntu22.04"
	ref, _ := name.ParseReference(src)
	if err := remote.WriteIndex(ref, multiArch(t, map[string]v1.Image{"linux/amd64": randomImage(t)})); err != nil {
		t.Fatal(err)
	}
	m := dst + "/platform/mirror"
	imgs := []spec.Image{
		{Name: "b", Base: src, Repos: spec.Repos{Mirror: m}},
		{Name: "a", Base: src, Repos: spec.Repos{Mirror: m}},
	}
	res, err := Run(ctx, imgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !cmp.Equal(res[0].Images, []string{"a", "b"}) || res[0].Target != m+"/nvidia/cuda@"+res[0].Digest {
		t.Errorf("Run = %+v, want one copy used by a and b into %s/nvidia/cuda", res, m)
	}

	_, err = Run(ctx, []spec.Image{{Name: "c", File: "specs/c.hcl", Base: src}})
	var nc *NotConfiguredError
	if !errors.As(err, &nc) || !strings.Contains(err.Error(), "specs/c.hcl") {
		t.Errorf("Run without repos.mirror = %v, want a NotConfiguredError naming the file", err)
	}

	// An upstream without the tag: the error names the base.
	_, err = Run(ctx, []spec.Image{{Name: "d", Base: up + "/nvidia/cuda:10.0-gone", Repos: spec.Repos{Mirror: m}}})
	if err == nil || !strings.Contains(err.Error(), "nvidia/cuda:10.0-gone") {
		t.Errorf("Run with a missing upstream tag = %v, want an error naming it", err)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCopyUnavailable(t *testing.T) {
	dst, _ := newRegistry(t)
	repo, _ := name.NewRepository(dst + "/m/nvidia/cuda")
	_, err := Copy(context.Background(), "127.0.0.1:1/nvidia/cuda:12.1.1-runtime-ubuntu22.04", repo,
		WithRemoteOptions(remote.WithRetryBackoff(remote.Backoff{Steps: 1})))
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Registry != "127.0.0.1:1" || exitcode.Code(err) != exitcode.Unavailable {
		t.Errorf("Copy from a dead registry = %v (exit %d), want an UnavailableError for 127.0.0.1:1, exit %d", err, exitcode.Code(err), exitcode.Unavailable)
	}
}
