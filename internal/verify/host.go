package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"imagectl/internal/lock"
	"imagectl/internal/version"
)

// ErrNoGPU is returned by a GPUProber that finds no GPU: no driver library,
// or a driver that reports zero devices.
var ErrNoGPU = errors.New("no GPU visible")

// GPUProber reads the host's GPU facts. NVML is the real one; tests use
// fakes. An implementation that finds no GPU returns an error wrapping
// ErrNoGPU.
type GPUProber interface {
	Probe(ctx context.Context) (Host, error)
}

// hostChecks turns the host facts into checks. gpuErr is the prober's
// error (nil when GPUs were found).
// fromImage says the facts came from the image's torch probe, which cannot
// see MIG or NVLink.
func hostChecks(l *lock.Lock, h Host, gpuErr error, secs float64, fromImage bool) []Check {
	cpuOnly := l.Verify.CPUOnly
	visible := Check{Name: "gpu.visible", Seconds: secs}
	switch {
	case cpuOnly:
		visible.Status = Skip
		visible.Value = "no GPU visible"
		if gpuErr == nil {
			visible.Value = fmt.Sprintf("%d GPU(s)", len(h.GPUs))
		}
		visible.Detail = "the lock marks the image CPU-only (verify.cpu_only): GPU checks are skipped"
	case gpuErr == nil:
		visible.Status = Pass
		visible.Value = fmt.Sprintf("%d GPU(s)", len(h.GPUs))
	default:
		visible.Status = Fail
		visible.Value = "no GPU visible"
		visible.Detail = gpuErr.Error()
	}
	checks := []Check{visible}
	if gpuErr != nil || cpuOnly {
		reason := "no GPU visible"
		if cpuOnly {
			reason = "CPU-only image"
		}
		for _, n := range []string{"driver.version", "gpu.count", "gpu.compute_capability", "gpu.mig", "gpu.nvlink"} {
			checks = append(checks, Check{Name: n, Status: Skip, Detail: reason})
		}
		return checks
	}

	drv := Check{Name: "driver.version", Value: h.DriverVersion, Threshold: ">= " + l.Core.DriverFloor}
	switch {
	case l.Core.DriverFloor == "":
		drv.Status, drv.Threshold, drv.Detail = Pass, "", "the lock has no driver floor"
	default:
		ok, err := version.AtLeast(h.DriverVersion, l.Core.DriverFloor)
		switch {
		case err != nil:
			drv.Status, drv.Detail = Fail, err.Error()
		case ok:
			drv.Status = Pass
		default:
			drv.Status = Fail
			drv.Detail = fmt.Sprintf("driver %s is below the image's floor %s", h.DriverVersion, l.Core.DriverFloor)
		}
	}
	checks = append(checks, drv)

	minGPUs := l.Verify.MinGPUs
	if minGPUs <= 0 {
		minGPUs = 1
	}
	count := Check{Name: "gpu.count", Value: fmt.Sprint(len(h.GPUs)), Threshold: fmt.Sprintf(">= %d", minGPUs), Status: Pass}
	names := make([]string, 0, len(h.GPUs))
	for _, g := range h.GPUs {
		names = append(names, fmt.Sprintf("%d: %s %s", g.Index, g.Name, g.UUID))
	}
	count.Detail = strings.Join(names, "; ")
	if len(h.GPUs) < minGPUs {
		count.Status = Fail
	}
	checks = append(checks, count)

	cc := Check{Name: "gpu.compute_capability", Threshold: "in " + strings.Join(l.Core.Archs, " "), Status: Pass}
	var ccs, bad []string
	for _, g := range h.GPUs {
		ccs = append(ccs, g.ComputeCapability)
		if len(l.Core.Archs) == 0 {
			continue
		}
		if ok, how := archSupports(l.Core.Archs, g.ComputeCapability); !ok {
			bad = append(bad, fmt.Sprintf("GPU %d (%s, sm_%s): %s", g.Index, g.Name, strings.ReplaceAll(g.ComputeCapability, ".", ""), how))
		} else if cc.Detail == "" {
			cc.Detail = how
		}
	}
	cc.Value = strings.Join(dedupe(ccs), ", ")
	switch {
	case len(l.Core.Archs) == 0:
		cc.Status, cc.Threshold, cc.Detail = Skip, "", "the lock lists no archs for the torch wheel"
	case len(bad) > 0:
		cc.Status, cc.Detail = Fail, "the torch wheel has no kernels for "+strings.Join(bad, "; ")
	}
	checks = append(checks, cc)

	mig := Check{Name: "gpu.mig", Value: "off", Status: Pass}
	var migOn []string
	for _, g := range h.GPUs {
		if g.MIG {
			migOn = append(migOn, fmt.Sprint(g.Index))
		}
	}
	if len(migOn) > 0 {
		mig.Value = "on for GPU " + strings.Join(migOn, ", ")
		if minGPUs > 1 {
			mig.Status = Fail
			mig.Detail = "MIG instances cannot run a multi-GPU NCCL all-reduce; disable MIG on verification nodes"
		}
	}
	if fromImage {
		mig = Check{Name: "gpu.mig", Status: Skip, Detail: "MIG mode needs NVML on the node; the facts came from the image's torch probe"}
	}
	checks = append(checks, mig)

	nv := Check{Name: "gpu.nvlink", Status: Pass}
	var links []string
	total := 0
	for _, g := range h.GPUs {
		links = append(links, fmt.Sprint(g.NVLinks))
		total += g.NVLinks
	}
	nv.Value = "active links per GPU: " + strings.Join(links, ", ")
	if total == 0 && len(h.GPUs) > 1 {
		nv.Detail = "no active NVLink: the all-reduce goes over PCIe"
	}
	if fromImage {
		nv = Check{Name: "gpu.nvlink", Status: Skip, Detail: "NVLink state needs NVML on the node; the facts came from the image's torch probe"}
	}
	checks = append(checks, nv)
	return checks
}

func dedupe(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
