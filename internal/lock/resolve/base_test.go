package resolve

import (
	"context"
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
)

func TestBasePull(t *testing.T) {
	for _, tc := range []struct {
		base lock.Base
		want string
	}{
		{lock.Base{Ref: "127.0.0.1:5000/a/b:tag", ManifestDigest: "sha256:m"}, "127.0.0.1:5000/a/b@sha256:m"},
		{lock.Base{Ref: "127.0.0.1:5000/a/b", ManifestDigest: "sha256:m"}, "127.0.0.1:5000/a/b@sha256:m"},
		{lock.Base{Ref: "nvidia/cuda:12.4.1-runtime@sha256:x", ManifestDigest: "sha256:m"}, "nvidia/cuda@sha256:m"},
		{lock.Base{Ref: "nvidia/cuda:12.1.1-runtime-ubuntu22.04", Mirror: "r:5000/m/nvidia/cuda", IndexDigest: "sha256:i", ManifestDigest: "sha256:m"}, "r:5000/m/nvidia/cuda@sha256:m"},
		{lock.Base{Ref: "r/a:t", IndexDigest: "sha256:i"}, "r/a@sha256:i"},
	} {
		if got := tc.base.Pull(); got != tc.want {
			t.Errorf("%+v.Pull() = %q, want %q", tc.base, got, tc.want)
		}
	}
}

// TestResolveBaseMirror: with a mirror the base is resolved in the mirror,
// the lock records the upstream ref and the mirror, and the upstream is
// never asked; a base missing from the mirror is a NotMirroredError.
func TestResolveBaseMirror(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	img, _ = mutate.ConfigFile(img, cf)
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	m := host + "/platform/mirror"
	ref, _ := name.ParseReference(m + "/nvidia/cuda:12.1.1-runtime-ubuntu22.04")
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	// The upstream is a registry that does not answer at all.
	upstream := "127.0.0.1:1/nvidia/cuda:12.1.1-runtime-ubuntu22.04"
	b, _, err := resolveBase(ctx, upstream, m, v1.Platform{OS: "linux", Architecture: "amd64"}, nil)
	if err != nil {
		t.Fatalf("resolveBase(%s, mirror %s): %v", upstream, m, err)
	}
	id, _ := idx.Digest()
	md, _ := img.Digest()
	want := lock.Base{Ref: upstream, Mirror: m + "/nvidia/cuda", IndexDigest: id.String(), ManifestDigest: md.String(), Platform: "linux/amd64"}
	if b != want {
		t.Errorf("resolveBase = %+v, want %+v", b, want)
	}

	_, _, err = resolveBase(ctx, "127.0.0.1:1/nvidia/cuda:11.8.0-runtime-ubuntu22.04", m, v1.Platform{OS: "linux", Architecture: "amd64"}, nil)
	var nm *NotMirroredError
	if !errors.As(err, &nm) || !strings.Contains(err.Error(), m+"/nvidia/cuda:11.8.0-runtime-ubuntu22.04") {
		t.Errorf("resolveBase of an unmirrored base = %v, want a NotMirroredError naming the mirror's reference", err)
	}
}
