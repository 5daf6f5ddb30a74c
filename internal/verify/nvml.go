//go:build cgo

package verify

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML reads GPU facts through the NVIDIA Management Library (go-nvml,
// which loads libnvidia-ml.so.1 at run time). On a machine without the
// library, or with no devices, Probe returns an error wrapping ErrNoGPU.
type NVML struct{}

// Probe implements GPUProber.
func (NVML) Probe(ctx context.Context) (Host, error) {
	h := Host{Hostname: hostname()}
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return h, fmt.Errorf("%w: NVML: %v", ErrNoGPU, ret)
	}
	defer nvml.Shutdown()
	if v, ret := nvml.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		h.DriverVersion = v
	}
	if v, ret := nvml.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		h.CUDADriver = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
	}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return h, fmt.Errorf("%w: NVML device count: %v", ErrNoGPU, ret)
	}
	if n == 0 {
		return h, fmt.Errorf("%w: NVML reports 0 devices", ErrNoGPU)
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return h, err
		}
		d, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return h, fmt.Errorf("NVML device %d: %v", i, ret)
		}
		g := GPU{Index: i}
		g.Name, _ = d.GetName()
		g.UUID, _ = d.GetUUID()
		if maj, mnr, ret := d.GetCudaComputeCapability(); ret == nvml.SUCCESS {
			g.ComputeCapability = fmt.Sprintf("%d.%d", maj, mnr)
		}
		if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemoryMiB = m.Total >> 20
		}
		if cur, _, ret := d.GetMigMode(); ret == nvml.SUCCESS {
			g.MIG = cur == nvml.DEVICE_MIG_ENABLE
		}
		for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
			st, ret := d.GetNvLinkState(link)
			if ret != nvml.SUCCESS {
				continue // link absent or NVLink unsupported
			}
			if st == nvml.FEATURE_ENABLED {
				g.NVLinks++
			}
		}
		h.GPUs = append(h.GPUs, g)
	}
	return h, nil
}
