//go:build gpu

package verify

import (
	"context"
	"errors"
	"testing"

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
