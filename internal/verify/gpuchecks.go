package verify

import (
	"fmt"
	"strings"

	"imagectl/internal/compat"
	"imagectl/internal/lock"
	"imagectl/internal/version"
)

// torchChecks compares torch's own view with the lock.
func torchChecks(l *lock.Lock, t torchOut, gpu bool, hostGPUs int, secs float64) []Check {
	cpuOnly := l.Verify.CPUOnly
	var out []Check

	wantTorch := l.Core.Torch
	if l.Core.TorchVariant != "" && !strings.Contains(wantTorch, "+") {
		wantTorch += "+" + l.Core.TorchVariant
	}
	tv := Check{Name: "torch.version", Value: t.Torch, Threshold: "== " + wantTorch, Status: Pass, Seconds: secs}
	if !torchMatches(l.Core.Torch, l.Core.TorchVariant, t.Torch) {
		tv.Status = Fail
		tv.Detail = fmt.Sprintf("lock has torch %s, image has %s", wantTorch, t.Torch)
	}
	out = append(out, tv)

	wantCUDA := compat.CUDAOfVariant(l.Core.TorchVariant)
	if l.Core.TorchVariant == "" {
		wantCUDA = l.Core.CUDA
	}
	cu := Check{Name: "cuda.runtime", Value: deref(t.CUDA), Threshold: "== " + wantCUDA, Status: Pass}
	switch {
	case l.Core.TorchVariant == "cpu":
		cu.Threshold = "none (cpu wheel)"
		if t.CUDA != nil {
			cu.Status, cu.Detail = Fail, fmt.Sprintf("lock has the cpu wheel, image's torch is built for CUDA %s", *t.CUDA)
		}
	case wantCUDA == "":
		cu.Status, cu.Threshold, cu.Detail = Skip, "", "the lock names no CUDA runtime"
	case t.CUDA == nil:
		cu.Status, cu.Detail = Fail, fmt.Sprintf("lock has CUDA runtime %s, image's torch has none (a cpu wheel)", wantCUDA)
	case *t.CUDA != wantCUDA:
		cu.Status, cu.Detail = Fail, fmt.Sprintf("lock has CUDA runtime %s, image has %s", wantCUDA, *t.CUDA)
	}
	if l.Core.CUDA != "" && cu.Detail == "" {
		cu.Detail = "base toolkit " + l.Core.CUDA
	}
	out = append(out, cu)

	var cudnn *string
	if t.CUDNN != nil {
		v := cudnnString(*t.CUDNN)
		cudnn = &v
	}
	out = append(out,
		libraryCheck("cudnn.version", "cuDNN", l.Core.CUDNN, cudnn, t.CUDNNError, cpuOnly, cudnnMatches),
		libraryCheck("nccl.version", "NCCL", l.Core.NCCL, t.NCCL, t.NCCLError, cpuOnly, func(locked, reported string) bool {
			return version.HasPrefix(reported, locked)
		}))

	avail := Check{Name: "cuda.available", Value: fmt.Sprint(t.CUDAAvailable), Threshold: "true", Status: Pass}
	count := Check{Name: "cuda.device_count", Value: fmt.Sprint(t.DeviceCount), Status: Pass}
	switch {
	case cpuOnly:
		avail.Status, avail.Threshold, avail.Detail = Skip, "", "CPU-only image"
		count.Status, count.Detail = Skip, "CPU-only image"
	case !gpu:
		avail.Status, avail.Detail = Fail, "no GPU visible"
		count.Status, count.Detail = Skip, "no GPU visible"
	default:
		if !t.CUDAAvailable {
			avail.Status, avail.Detail = Fail, "the host has GPUs but torch.cuda.is_available() is false inside the image"
		}
		minGPUs := max(l.Verify.MinGPUs, 1)
		count.Threshold = fmt.Sprintf("== %d host GPUs, >= %d", hostGPUs, minGPUs)
		if t.DeviceCount != hostGPUs || t.DeviceCount < minGPUs {
			count.Status = Fail
			count.Detail = fmt.Sprintf("torch sees %d device(s), the host %d, the lock needs %d", t.DeviceCount, hostGPUs, minGPUs)
		} else {
			var names []string
			for _, d := range t.Devices {
				names = append(names, d.Name+" (sm "+d.Capability+")")
			}
			count.Detail = strings.Join(names, ", ")
		}
	}
	out = append(out, avail, count)
	out = append(out, familyChecks(l, t)...)
	return out
}

// torchMatches compares the installed torch version ("2.6.0+cu124") with
// the lock's release and variant. A wheel from the default index may carry
// no local label, so a missing label is accepted.
func torchMatches(release, variant, have string) bool {
	pub, local, hasLocal := strings.Cut(have, "+")
	if strings.Contains(release, "+") {
		return release == have
	}
	if pub != release {
		return false
	}
	return variant == "" || !hasLocal || local == variant
}

func allReduceChecks(l *lock.Lock, ar allReduceOut, err error, secs float64) []Check {
	sum := Check{Name: CheckAllReduce, Seconds: secs, Status: Pass,
		Threshold: fmt.Sprintf("every element == %g", ar.Want)}
	bw := Check{Name: CheckAllReduceBusBW, Status: Pass}
	if err == nil && ar.Error != "" {
		err = fmt.Errorf("%s", ar.Error)
	}
	if err != nil {
		sum.Status, sum.Detail = Fail, err.Error()
		bw.Status, bw.Detail = Skip, "the all-reduce did not complete"
		return []Check{sum, bw}
	}
	sum.Value = fmt.Sprintf("%g on %d GPUs", ar.First, ar.WorldSize)
	sum.Detail = fmt.Sprintf("%s per rank, one process per GPU", bytesString(ar.Bytes))
	if !ar.OK {
		sum.Status = Fail
		sum.Detail = fmt.Sprintf("%d elements differ from %g", ar.BadElements, ar.Want)
	}
	bw.Value = fmt.Sprintf("%.1f GB/s", ar.BusBW)
	bw.Detail = fmt.Sprintf("algbw %.1f GB/s, %.3f ms per all-reduce of %s, %d iterations, slowest rank",
		ar.AlgBW, ar.SecondsPerIter*1e3, bytesString(ar.Bytes), ar.Iters)
	switch floor := l.Verify.MinBusBandwidthGBps; {
	case ar.WorldSize < 2:
		bw.Status, bw.Detail = Skip, "one GPU: bus bandwidth needs two or more"
	case floor <= 0:
		bw.Threshold = "none (verify.min_busbw_gbps unset)"
	default:
		bw.Threshold = fmt.Sprintf(">= %.1f GB/s", floor)
		if ar.BusBW < floor {
			bw.Status = Fail
		}
	}
	return []Check{sum, bw}
}

func compileCheck(cold, warm compileOut, coldErr, warmErr error, secs float64) Check {
	c := Check{Name: CheckCompileCache, Seconds: secs, Threshold: "second process hits the cache", Status: Pass}
	if coldErr == nil && cold.Error != "" {
		coldErr = fmt.Errorf("%s", cold.Error)
	}
	if warmErr == nil && warm.Error != "" {
		warmErr = fmt.Errorf("%s", warm.Error)
	}
	switch {
	case coldErr != nil:
		c.Status, c.Detail = Fail, "first torch.compile: "+coldErr.Error()
		return c
	case warmErr != nil:
		c.Status, c.Detail = Fail, "second torch.compile: "+warmErr.Error()
		return c
	}
	c.Value = fmt.Sprintf("cold %.2f s, warm %.2f s", cold.FirstCallS, warm.FirstCallS)
	c.Detail = fmt.Sprintf("first compiled call on %s; processes: cold import %.2f s, total %.2f s; warm import %.2f s, total %.2f s; cache %s; cold counters %v %v, warm counters %v %v",
		cold.Device, cold.ImportS, cold.TotalS, warm.ImportS, warm.TotalS, cold.CacheDir, cold.Inductor, cold.AOTAutograd, warm.Inductor, warm.AOTAutograd)
	switch {
	case !cold.OK || !warm.OK:
		c.Status = Fail
		c.Detail = "compiled result differs from eager; " + c.Detail
	case warm.hits() == 0:
		c.Status = Fail
		c.Detail = "the second process did not load the compiled graph from the cache; " + c.Detail
	}
	return c
}

// libraryCheck is check name of library lib (cuDNN, NCCL), which the lock
// pins at locked and torch reports as reported (nil: none, why says why):
// skipped when the lock names no version, or when a CPU-only image's torch
// reports none; failed when torch reports none, or a version that does
// not match locked (matches(locked, *reported) is false).
func libraryCheck(name, lib, locked string, reported *string, why string, cpuOnly bool, matches func(locked, reported string) bool) Check {
	c := Check{Name: name, Value: deref(reported), Threshold: "== " + locked, Status: Pass}
	switch {
	case locked == "":
		c.Status, c.Threshold, c.Detail = Skip, "", "the lock names no "+lib
	case reported == nil && cpuOnly:
		c.Status, c.Detail = Skip, "CPU-only image; torch reports no "+lib+": "+why
	case reported == nil:
		c.Status, c.Detail = Fail, fmt.Sprintf("lock has %s %s, image's torch reports none %s", lib, locked, why)
	case !matches(locked, *reported):
		c.Status, c.Detail = Fail, fmt.Sprintf("lock has %s %s, image has %s", lib, locked, *reported)
	}
	return c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
