//go:build gpu

package verify

import (
	"context"
	"errors"
	"os"
	"testing"

	"imagectl/internal/lock"
	"imagectl/internal/version"
)

// These tests run on the GPU machine (hack/gpu/run.sh): go test -tags gpu.

func TestGPUNVMLProbe(t *testing.T) {
	h, err := NVML{}.Probe(context.Background())
	if errors.Is(err, ErrNoGPU) {
		t.Skipf("no GPU on this machine: %v", err)
	}
	if err != nil {
		t.Fatalf("NVML.Probe() error = %v", err)
	}
	if _, err := version.Parse(h.DriverVersion); err != nil {
		t.Errorf("driver version %q: %v", h.DriverVersion, err)
	}
	for _, g := range h.GPUs {
		if g.UUID == "" || g.Name == "" {
			t.Errorf("GPU %d: empty UUID or name: %+v", g.Index, g)
		}
		if _, _, ok := splitCC(g.ComputeCapability); !ok {
			t.Errorf("GPU %d: compute capability %q", g.Index, g.ComputeCapability)
		}
	}
	t.Logf("host: %+v", h)
}

// TestGPUInPlace verifies this machine's environment against the lock
// named by IMAGECTL_GPU_LOCK (hack/gpu/mklock writes one).
func TestGPUInPlace(t *testing.T) {
	if _, err := (NVML{}).Probe(context.Background()); err != nil {
		t.Skipf("no GPU on this machine: %v", err)
	}
	path := os.Getenv("IMAGECTL_GPU_LOCK")
	if path == "" {
		t.Skip("IMAGECTL_GPU_LOCK is not set: hack/gpu/run.sh sets it to the lock mklock wrote for this machine")
	}
	l, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	// The init is not in front of this test process: check the GPU and
	// version facts, not the paths the init would have set.
	l.Runtime.TmpDir, l.Runtime.FingerprintPath = "", ""
	l.Runtime.Caches.Inductor, l.Runtime.Caches.Triton, l.Runtime.Caches.HF = "", "", ""
	res, err := Run(context.Background(), l, WithRuntime(&InPlace{Python: os.Getenv("IMAGECTL_GPU_PYTHON")}), WithAllReduceIters(10, 3))
	if err != nil {
		for _, c := range res.Checks {
			t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
		}
		t.Fatalf("Run() error = %v", err)
	}
	for _, c := range res.Checks {
		if c.Name == "nccl.allreduce.busbw" || c.Name == "compile.cache" {
			t.Logf("%s: %s (%s)", c.Name, c.Value, c.Detail)
		}
	}
}
