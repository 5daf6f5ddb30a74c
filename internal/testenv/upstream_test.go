package testenv

import (
	"archive/tar"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestUpstreamFixture checks that the upstream bases have the real
// nvidia/cuda tags' shape: an OCI index with a linux/amd64 manifest, the
// CUDA environment and labels, and no Python anywhere in the rootfs.
func TestUpstreamFixture(t *testing.T) {
	e := Get(t)
	for _, tag := range UpstreamCUDATags {
		t.Run(tag, func(t *testing.T) {
			ref, err := name.ParseReference(e.UpstreamCUDA(t, tag))
			if err != nil {
				t.Fatal(err)
			}
			idx, err := remote.Index(ref)
			if err != nil {
				t.Fatalf("remote.Index(%s): %v", ref, err)
			}
			if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
				t.Errorf("%s media type %s, want %s", ref, mt, types.OCIImageIndex)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			var amd64 v1.Image
			for _, m := range im.Manifests {
				if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == "amd64" {
					img, err := idx.Image(m.Digest)
					if err != nil {
						t.Fatal(err)
					}
					amd64 = img
				}
			}
			if amd64 == nil {
				t.Fatalf("%s has no linux/amd64 manifest: %+v", ref, im.Manifests)
			}
			cf, err := amd64.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			for _, kv := range cf.Config.Env {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			version, _, _ := strings.Cut(tag, "-")
			want := map[string]string{
				"LD_LIBRARY_PATH":            "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
				"NVIDIA_VISIBLE_DEVICES":     "all",
				"NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
				"CUDA_VERSION":               version,
			}
			for k, v := range want {
				if env[k] != v {
					t.Errorf("%s env %s=%q, want %q", ref, k, env[k], v)
				}
			}
			if !strings.HasPrefix(env["PATH"], "/usr/local/nvidia/bin:/usr/local/cuda/bin:") {
				t.Errorf("%s PATH=%q, want /usr/local/nvidia/bin:/usr/local/cuda/bin first", ref, env["PATH"])
			}
			mm := version[:strings.LastIndex(version, ".")]
			if !strings.HasPrefix(env["NVIDIA_REQUIRE_CUDA"], "cuda>="+mm+" ") || env["NV_CUDA_CUDART_VERSION"] == "" {
				t.Errorf("%s NVIDIA_REQUIRE_CUDA=%q NV_CUDA_CUDART_VERSION=%q, want cuda>=%s ... and a cudart version", ref, env["NVIDIA_REQUIRE_CUDA"], env["NV_CUDA_CUDART_VERSION"], mm)
			}
			if got := cf.Config.Labels["maintainer"]; got != "NVIDIA CORPORATION <cudatools@nvidia.com>" {
				t.Errorf("%s label maintainer=%q", ref, got)
			}
			layers, err := amd64.Layers()
			if err != nil {
				t.Fatal(err)
			}
			sources := false
			for _, l := range layers {
				rc, err := l.Uncompressed()
				if err != nil {
					t.Fatal(err)
				}
				tr := tar.NewReader(rc)
				for {
					h, err := tr.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					n := strings.TrimPrefix(h.Name, "./")
					if strings.HasPrefix(n, "usr/bin/python") || strings.HasPrefix(n, "usr/bin/pip") {
						t.Errorf("%s has %s: the fixture must have no Python", ref, n)
					}
					if n == "etc/apt/sources.list" && h.Size > 0 {
						sources = true
					}
				}
				rc.Close()
			}
			if !sources {
				t.Errorf("%s has no /etc/apt/sources.list", ref)
			}
		})
	}
}
