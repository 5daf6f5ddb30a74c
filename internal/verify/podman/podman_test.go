package podman

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/verify"
)

func TestPodmanArgs(t *testing.T) {
	for k := range verify.PassEnv {
		t.Setenv(k, "")
	}
	t.Setenv("NCCL_NVLS_ENABLE", "0") // as the GPU host sets it
	p, err := New("127.0.0.1:5000/demo@sha256:"+strings.Repeat("ab", 32), WithStorage("/mnt/s", "/storage"))
	if err != nil {
		t.Fatal(err)
	}
	got := p.Args("/tmp/probes", verify.Probe{Script: "env.py", Args: []string{"--fingerprint", "/storage/fp.json"}, GPU: true})
	want := []string{"run", "--rm", "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--shm-size", "1g", "--device", "nvidia.com/gpu=all",
		"-e", "NCCL_NVLS_ENABLE=0", "-e", "NVSHMEM_DISABLE_NVLS=1", "-e", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1",
		"-e", "IMAGECTL_IMAGE_DIGEST=sha256:" + strings.Repeat("ab", 32),
		"-v", "/tmp/probes:/imagectl-probes:ro", "-v", "/mnt/s:/storage",
		"--tls-verify=false", p.image, "python3", "/imagectl-probes/env.py", "--fingerprint", "/storage/fp.json"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Podman.Args() (-want +got):\n%s", d)
	}
	p, err = New("oci:/x", WithBinary("docker"), WithGPUMode("docker"), WithUlimits())
	if err != nil {
		t.Fatal(err)
	}
	got = p.Args("/p", verify.Probe{Script: "torchinfo.py"})
	// An oci: layout is no digest: the container is not told one.
	want = []string{"run", "--rm", "--network=none", "--shm-size", "1g",
		"-e", "NCCL_NVLS_ENABLE=0", "-e", "NVSHMEM_DISABLE_NVLS=1", "-e", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1",
		"-v", "/p:/imagectl-probes:ro", "oci:/x", "python3", "/imagectl-probes/torchinfo.py"}
	if d := cmp.Diff(want, got); d != "" || p.Name() != "docker" || p.RanDigest() != "" {
		t.Errorf("Podman.Args() docker, no GPU (-want +got):\n%s", d)
	}
}

func TestGPUFlags(t *testing.T) {
	for _, tc := range []struct {
		mode string
		n    int
		want []string
	}{
		{"cdi", 0, nil},
		{"", 2, []string{"--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1"}},
		{"docker", 0, []string{"--gpus", "all"}},
		{"docker", 1, []string{"--gpus", "1"}},
	} {
		o, err := makeOptions(WithGPUMode(tc.mode), WithGPUs(tc.n))
		if err != nil || !cmp.Equal(o.gpuFlags(), tc.want) {
			t.Errorf("WithGPUMode(%q), WithGPUs(%d): flags %q, %v; want %q", tc.mode, tc.n, o.gpuFlags(), err, tc.want)
		}
	}
	if _, err := makeOptions(WithGPUMode("nvidia")); err == nil {
		t.Errorf("WithGPUMode(nvidia) = nil error, want one")
	}
}
