//go:build !cgo

package verify

import (
	"context"
	"fmt"
)

// NVML reads GPU facts through the NVIDIA Management Library. This build
// has no cgo, which go-nvml needs, so Probe always reports no GPU: build
// imagectl with CGO_ENABLED=1 (the default where a C compiler exists) to
// verify GPU images.
type NVML struct{}

// Probe implements GPUProber.
func (NVML) Probe(context.Context) (Host, error) {
	return Host{Hostname: hostname()}, fmt.Errorf("%w: this imagectl was built without cgo, which NVML needs", ErrNoGPU)
}
