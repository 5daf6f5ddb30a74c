package containerd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"imagectl/internal/verify"
	"imagectl/internal/verify/verifytest"
)

// fakeImage is an oci.Image whose config lives in a local content store.
type fakeImage struct {
	desc  ocispec.Descriptor
	store content.Store
}

func (i fakeImage) Config(context.Context) (ocispec.Descriptor, error) { return i.desc, nil }
func (i fakeImage) ContentStore() content.Store                        { return i.store }

func newFakeImage(t *testing.T, cfg ocispec.ImageConfig) fakeImage {
	t.Helper()
	store, err := local.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if err := content.WriteBlob(context.Background(), store, "config", bytes.NewReader(b), desc); err != nil {
		t.Fatal(err)
	}
	return fakeImage{desc: desc, store: store}
}

// writeCDISpec writes an nvidia-ctk-shaped CDI spec with n GPUs into a
// fresh folder and returns it. /dev/null and /dev/zero stand in for the
// host's device nodes (CDI stats them).
func writeCDISpec(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var devs []string
	for i := range n {
		devs = append(devs, `{"name": "`+string(rune('0'+i))+`", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia`+string(rune('0'+i))+`", "hostPath": "/dev/null"}]}}`)
	}
	devs = append(devs, `{"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0", "hostPath": "/dev/null"}]}}`)
	spec := `{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [` + strings.Join(devs, ",") + `],
	  "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "deviceNodes": [{"path": "/dev/nvidiactl", "hostPath": "/dev/zero"}],
	    "mounts": [{"hostPath": "/usr/lib/libcuda.so.1", "containerPath": "/usr/lib/libcuda.so.1", "options": ["ro", "bind"]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "nvidia.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestGPUDevices(t *testing.T) {
	cache, err := cdi.NewCache(cdiOptions([]string{writeCDISpec(t, 2)})...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n       int
		want    []string
		wantErr bool
	}{
		{0, []string{"nvidia.com/gpu=all"}, false},
		{1, []string{"nvidia.com/gpu=0"}, false},
		{2, []string{"nvidia.com/gpu=0", "nvidia.com/gpu=1"}, false},
		{3, nil, true},
	} {
		got, err := GPUDevices(cache, tc.n)
		if tc.wantErr {
			if !errors.Is(err, verify.ErrNoGPU) || !strings.Contains(err.Error(), "3 GPU(s) requested") {
				t.Errorf("GPUDevices(%d) error = %v, want verify.ErrNoGPU naming the request", tc.n, err)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("GPUDevices(%d) = %v, %v; want %v", tc.n, got, err, tc.want)
		}
	}
}

// TestContainerdSpec builds a probe container's OCI spec the way containerd
// would (oci.GenerateSpec over the same options) and checks what the issue
// asks of it: the image's entrypoint with the probe as its command, the
// image's env kept with the multicast switches and the digest added, the
// probes read-only, the storage read-write, /dev/shm sized, the network
// namespace joined, and the CDI devices injected for a GPU probe only.
func TestContainerdSpec(t *testing.T) {
	for k := range verify.PassEnv {
		t.Setenv(k, "")
	}
	img := newFakeImage(t, ocispec.ImageConfig{
		Entrypoint: []string{"/usr/local/bin/imagectl-init", "--"},
		Cmd:        []string{"bash"},
		Env:        []string{"PATH=/opt/venv/bin:/usr/bin:/bin", "NVIDIA_VISIBLE_DEVICES=all"},
	})
	cache, err := cdi.NewCache(cdiOptions([]string{writeCDISpec(t, 1)})...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(verifytest.Ref, WithShmBytes(2<<30), WithStorage("/host/storage", "/storage"))
	if err != nil {
		t.Fatal(err)
	}
	r.cdi = cache
	ctx := namespaces.WithNamespace(context.Background(), "imagectl")
	// containerd reads the user's groups from the unpacked root; a folder
	// stands in for the snapshot.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string]string{"passwd": "root:x:0:0:root:/root:/bin/sh\n", "group": "root:x:0:\n"} {
		if err := os.WriteFile(filepath.Join(root, "etc", f), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := func(p verify.Probe, devices []string) *oci.Spec {
		t.Helper()
		opts := append([]oci.SpecOpts{oci.WithRootFSPath(root)}, r.SpecOpts(img, "/tmp/probes", "/run/netns/x", p, devices)...)
		s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "probe"}, opts...)
		if err != nil {
			t.Fatalf("GenerateSpec(%s) = %v", p.Name, err)
		}
		return s
	}

	s := gen(verify.Probe{Name: "torch", Script: "torchinfo.py", GPU: true, Python: "/opt/venv/bin/python"}, []string{"nvidia.com/gpu=0"})
	if want := []string{"/usr/local/bin/imagectl-init", "--", "/opt/venv/bin/python", "/imagectl-probes/torchinfo.py"}; !cmp.Equal(s.Process.Args, want) {
		t.Errorf("args = %q, want %q (the init stays the entrypoint)", s.Process.Args, want)
	}
	env := strings.Join(s.Process.Env, "\n")
	for _, want := range []string{"PATH=/opt/venv/bin:/usr/bin:/bin", "NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1",
		"NVSHMEM_DISABLE_NVLS=1", "IMAGECTL_IMAGE_DIGEST=" + verifytest.Ref.DigestStr(), "NVIDIA_VISIBLE_DEVICES=void"} {
		if !strings.Contains("\n"+env+"\n", "\n"+want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	mounts := map[string]string{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = m.Source + " " + strings.Join(m.Options, ",")
	}
	for dst, want := range map[string]string{
		"/imagectl-probes":      "/tmp/probes rbind,ro",
		"/storage":              "/host/storage rbind,rw",
		"/usr/lib/libcuda.so.1": "/usr/lib/libcuda.so.1 ro,bind",
	} {
		if mounts[dst] != want {
			t.Errorf("mount %s = %q, want %q", dst, mounts[dst], want)
		}
	}
	if !strings.Contains(mounts["/dev/shm"], "size=2097152k") {
		t.Errorf("/dev/shm = %q, want size=2097152k", mounts["/dev/shm"])
	}
	netns := ""
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == "network" {
			netns = ns.Path
		}
	}
	if netns != "/run/netns/x" {
		t.Errorf("network namespace path = %q, want /run/netns/x", netns)
	}
	var nodes []string
	for _, d := range s.Linux.Devices {
		nodes = append(nodes, d.Path)
	}
	if !cmp.Equal(nodes, []string{"/dev/nvidiactl", "/dev/nvidia0"}) {
		t.Errorf("device nodes = %v, want /dev/nvidia0 and /dev/nvidiactl from the CDI spec", nodes)
	}

	s = gen(verify.Probe{Name: "env", Script: "env.py"}, nil)
	if len(s.Linux.Devices) != 0 {
		t.Errorf("a probe without GPU got devices %v", s.Linux.Devices)
	}
}

// TestLoopbackNetNS creates the probes' network namespace (root only) and
// checks it holds only lo, up.
func TestLoopbackNetNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a network namespace needs root")
	}
	n, err := newLoopbackNetNS()
	if err != nil {
		t.Fatalf("newLoopbackNetNS() = %v", err)
	}
	defer func() {
		if err := n.remove(); err != nil {
			t.Errorf("remove() = %v", err)
		}
		if _, err := os.Stat(n.dir); !os.IsNotExist(err) {
			t.Errorf("%s still exists after remove: %v", n.dir, err)
		}
	}()
	links, up, err := netnsLinks(n.path)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(links, []string{"lo"}) || !up["lo"] {
		t.Errorf("links %v (up %v), want only lo, up", links, up)
	}
}

func TestWithUnpackConcurrency(t *testing.T) {
	ref, err := name.NewDigest("registry.example/img@sha256:" + strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n       int
		want    int
		wantErr bool
	}{{0, 0, true}, {-2, 0, true}, {1, 1, false}, {8, 8, false}} {
		rt, err := New(ref, WithUnpackConcurrency(tc.n))
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "unpack concurrency") {
				t.Errorf("New(WithUnpackConcurrency(%d)) = %v, want an error naming the unpack concurrency", tc.n, err)
			}
			continue
		}
		if err != nil || rt.o.unpacks != tc.want {
			t.Errorf("New(WithUnpackConcurrency(%d)): unpacks %v, %v; want %d", tc.n, rt, err, tc.want)
		}
	}
	if rt, err := New(ref); err != nil || rt.o.unpacks != DefaultUnpackConcurrency {
		t.Errorf("New() = %v, want unpack concurrency %d by default", err, DefaultUnpackConcurrency)
	}
}
