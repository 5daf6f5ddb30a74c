//go:build gpu

package verify_test

import (
	"context"
	"os"
	"testing"

	"imagectl/internal/lock"
	"imagectl/internal/verify"
	"imagectl/internal/verify/inplace"
)

// TestGPUInPlace verifies this machine's environment against the lock
// named by IMAGECTL_GPU_LOCK (hack/gpu/mklock writes one).
func TestGPUInPlace(t *testing.T) {
	if _, err := (verify.NVML{}).Probe(context.Background()); err != nil {
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
	rt, err := inplace.New(inplace.WithPython(os.Getenv("IMAGECTL_GPU_PYTHON")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := verify.Run(context.Background(), l, verify.WithRuntime(rt), verify.WithAllReduceIters(10, 3))
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
