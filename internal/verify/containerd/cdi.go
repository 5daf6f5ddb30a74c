package containerd

import (
	"context"
	"errors"
	"fmt"
	"imagectl/internal/verify"
	"sort"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"tags.cncf.io/container-device-interface/pkg/cdi"
)

// GPUDeviceKind is the CDI kind of NVIDIA GPUs (nvidia-ctk cdi generate).
const GPUDeviceKind = "nvidia.com/gpu"

func cdiOptions(dirs []string) []cdi.Option {
	opts := []cdi.Option{cdi.WithAutoRefresh(false)}
	if len(dirs) > 0 {
		opts = append(opts, cdi.WithSpecDirs(dirs...))
	}
	return opts
}

// GPUDevices returns the CDI device names a GPU probe gets from cache: all
// (nvidia.com/gpu=all) or the first n indexed GPUs.
func GPUDevices(cache *cdi.Cache, n int) ([]string, error) {
	if n <= 0 {
		return []string{GPUDeviceKind + "=all"}, nil
	}
	var idx []int
	for _, d := range cache.ListDevices() {
		kind, dev, ok := strings.Cut(d, "=")
		if !ok || kind != GPUDeviceKind {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(dev, "%d", &i); err == nil && fmt.Sprint(i) == dev {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	if len(idx) < n {
		return nil, fmt.Errorf("%w: %d GPU(s) requested, the host's CDI specs (%s) name %d indexed %s device(s)",
			verify.ErrNoGPU, n, strings.Join(cache.GetSpecDirectories(), ", "), len(idx), GPUDeviceKind)
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s=%d", GPUDeviceKind, idx[i])
	}
	return out, nil
}

// withCDIDevices injects devices from cache, as containerd's own
// pkg/cdi.WithCDIDevices does from the library's default cache.
func withCDIDevices(cache *cdi.Cache, devices []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(devices) == 0 {
			return nil
		}
		if cache == nil {
			return errors.New("CDI device injection: no CDI cache")
		}
		if _, err := cache.InjectDevices(s, devices...); err != nil {
			return fmt.Errorf("CDI device injection of %s: %w", strings.Join(devices, ", "), err)
		}
		return nil
	}
}
