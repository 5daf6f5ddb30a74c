package verify

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"imagectl/internal/lock"
	"imagectl/internal/version"
)

// bootstrap are distributions a venv carries without the lock asking for
// them; they are reported, not failed, unless the lock pins them.
var bootstrap = map[string]bool{"pip": true, "setuptools": true, "wheel": true}

// envChecks evaluates the CPU-side probe.
// digest is the image digest the result is bound to ("" when none).
func envChecks(l *lock.Lock, e envOut, digest string, secs float64) []Check {
	var out []Check

	py := Check{Name: "python.version", Value: e.Python, Threshold: "== " + l.Core.Python, Seconds: secs, Status: Pass}
	switch {
	case l.Core.Python == "":
		py.Status, py.Threshold, py.Detail = Skip, "", "the lock names no Python version"
	case !version.HasPrefix(e.Python, l.Core.Python):
		py.Status = Fail
		py.Detail = fmt.Sprintf("lock has Python %s, image has %s (%s)", l.Core.Python, e.Python, e.Executable)
	case l.Python.Path != "" && e.LockedInterpreter != "" && e.RealExecutable != e.LockedInterpreter:
		py.Status = Fail
		py.Detail = fmt.Sprintf("the probes ran %s (%s), the lock's interpreter is %s (%s)", e.Executable, e.RealExecutable, l.Python.Path, e.LockedInterpreter)
	default:
		py.Detail = e.Executable
		if l.Python.Path != "" {
			py.Detail += " -> " + l.Python.Path
		}
	}
	out = append(out, py)

	out = append(out, pipCheck(l.Pip, e.Packages))
	out = append(out, cudaToolkitCheck(l.Core.CUDA, e.CUDAToolkit))

	shm := Check{Name: "shm.size", Status: Pass}
	if e.ShmBytes != nil {
		shm.Value = bytesString(*e.ShmBytes)
	} else {
		shm.Value = "no /dev/shm"
	}
	if min := l.Runtime.MinShmBytes; min > 0 {
		shm.Threshold = ">= " + bytesString(min)
		if e.ShmBytes == nil || *e.ShmBytes < min {
			shm.Status = Fail
			shm.Detail = "DataLoader workers and NCCL need shared memory; give the container more (--shm-size, or a memory-backed emptyDir at /dev/shm)"
		}
	}
	out = append(out, shm)

	tmp := Check{Name: "tmpdir", Value: e.Env["TMPDIR"], Status: Pass}
	switch want := l.Runtime.TmpDir; {
	case want == "":
		tmp.Status, tmp.Detail = Skip, "the lock sets no runtime.tmpdir"
	case e.Env["TMPDIR"] != want:
		tmp.Threshold = "== " + want
		tmp.Status = Fail
		tmp.Detail = fmt.Sprintf("the init should export TMPDIR=%s, the image has %q", want, e.Env["TMPDIR"])
	case !e.TmpdirWritable:
		tmp.Threshold = "== " + want
		tmp.Status = Fail
		tmp.Detail = want + " is not a writable folder"
	default:
		tmp.Threshold = "== " + want
	}
	out = append(out, tmp)

	caches := Check{Name: "caches", Status: Pass}
	var want, bad []string
	for _, c := range []struct{ env, path string }{
		{"TORCHINDUCTOR_CACHE_DIR", l.Runtime.Caches.Inductor},
		{"TRITON_CACHE_DIR", l.Runtime.Caches.Triton},
		{"HF_HOME", l.Runtime.Caches.HF},
		{"CUDA_CACHE_PATH", l.Runtime.Caches.CUDA},
	} {
		if c.path == "" {
			continue
		}
		want = append(want, c.env+"="+c.path)
		if got := e.Env[c.env]; got != c.path {
			bad = append(bad, fmt.Sprintf("%s is %q, want %s", c.env, got, c.path))
		}
	}
	caches.Threshold = strings.Join(want, " ")
	caches.Value = fmt.Sprintf("%d of %d as locked", len(want)-len(bad), len(want))
	switch {
	case len(want) == 0:
		caches.Status, caches.Value, caches.Detail = Skip, "", "the lock sets no runtime.caches"
	case len(bad) > 0:
		caches.Status, caches.Detail = Fail, strings.Join(bad, "; ")
	}
	out = append(out, caches)

	out = append(out, fingerprintCheck(l, e, digest))
	return out
}

// cudaToolkitCheck compares the lock's core.cuda (the base's toolkit, what
// a spec's cuda means) with what the image says of its own toolkit: every
// source it has must agree with the lock (the release for CUDA_VERSION and
// version.json, major.minor for the cuda-cudart deb, whose version is the
// cudart library's).
func cudaToolkitCheck(want string, t cudaToolkitOut) Check {
	c := Check{Name: "cuda.toolkit", Status: Pass}
	type source struct{ what, version string }
	var srcs []source
	if t.Env != "" {
		srcs = append(srcs, source{"CUDA_VERSION", t.Env})
	}
	if t.VersionJSON != "" {
		srcs = append(srcs, source{"/usr/local/cuda/version.json", t.VersionJSON})
	}
	if len(t.CudartDeb) == 2 && t.CudartDeb[1] != "" {
		srcs = append(srcs, source{"deb " + t.CudartDeb[0], t.CudartDeb[1]})
	}
	var seen []string
	for _, s := range srcs {
		seen = append(seen, s.version+" ("+s.what+")")
	}
	if len(srcs) > 0 {
		c.Value = srcs[0].version
	}
	if want != "" {
		c.Threshold = "== " + want
	}
	switch {
	case t.VersionJSONError != "":
		c.Status, c.Detail = Fail, "the image's toolkit cannot be read: "+t.VersionJSONError
	case len(srcs) == 0:
		c.Status, c.Value, c.Detail = Skip, "none", "the base has no CUDA toolkit (no CUDA_VERSION, /usr/local/cuda/version.json or cuda-cudart deb)"
		if want != "" {
			c.Detail += "; the lock's core.cuda is " + want
		}
	case want == "":
		c.Status, c.Detail = Skip, "the lock names no CUDA toolkit; the image has "+strings.Join(seen, ", ")
	default:
		var bad []string
		for _, s := range srcs {
			ok := version.HasPrefix(s.version, want)
			if strings.HasPrefix(s.what, "deb ") {
				ok = majorMinor(s.version) == majorMinor(want)
			}
			if !ok {
				bad = append(bad, s.version+" ("+s.what+")")
			}
		}
		c.Detail = strings.Join(seen, ", ")
		if len(bad) > 0 {
			c.Status = Fail
			c.Value = strings.SplitN(bad[0], " ", 2)[0]
			c.Detail = fmt.Sprintf("lock has CUDA toolkit %s, image has %s", want, strings.Join(bad, ", "))
		}
	}
	return c
}

// majorMinor is "12.1" of "12.1.105-1".
func majorMinor(v string) string {
	f := strings.SplitN(v, ".", 3)
	if len(f) < 2 {
		return v
	}
	return f[0] + "." + strings.SplitN(f[1], "-", 2)[0]
}

func fingerprintCheck(l *lock.Lock, e envOut, digest string) Check {
	c := Check{Name: "init.fingerprint", Value: l.Runtime.FingerprintPath, Status: Pass}
	fp := e.Fingerprint
	switch {
	case l.Runtime.FingerprintPath == "":
		c.Status, c.Detail = Skip, "the lock's runtime writes no fingerprint"
		return c
	case !fp.Present:
		c.Status = Fail
		c.Detail = "the init's fingerprint is missing: " + firstNonEmpty(fp.Error, "not found") + " (was the image started through imagectl-init?)"
		return c
	case fp.Error != "":
		c.Status, c.Detail = Fail, fp.Error
		return c
	}
	var obj map[string]any
	if err := json.Unmarshal(fp.Content, &obj); err != nil {
		c.Status, c.Detail = Fail, "the fingerprint is not a JSON object"
		return c
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c.Detail = "fields: " + strings.Join(keys, ", ")
	if got := findString(obj, "lock_digest"); got != "" && l.Digest != "" && got != l.Digest {
		c.Status = Fail
		c.Detail = fmt.Sprintf("the fingerprint names lock %s, verification uses lock %s", got, l.Digest)
	}
	// The platform tells the init which image it started (IMAGECTL_IMAGE_DIGEST):
	// it must be the digest this result is bound to.
	if got, ok := obj["image_digest"].(string); ok && got != "" && digest != "" && got != digest {
		c.Status = Fail
		c.Detail = fmt.Sprintf("the container was started from image %s, verification is for %s", got, digest)
	}
	return c
}

// findString returns the first string value of key anywhere in v.
func findString(v any, key string) string {
	switch t := v.(type) {
	case map[string]any:
		if s, ok := t[key].(string); ok {
			return s
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s := findString(t[k], key); s != "" {
				return s
			}
		}
	case []any:
		for _, x := range t {
			if s := findString(x, key); s != "" {
				return s
			}
		}
	}
	return ""
}

func normName(s string) string {
	s = strings.ToLower(s)
	return strings.NewReplacer("_", "-", ".", "-").Replace(s)
}

// pipCheck compares the installed distributions with the lock's wheels.
func pipCheck(wheels []lock.Wheel, installed [][2]string) Check {
	c := Check{Name: "pip.packages", Threshold: fmt.Sprintf("== the lock's %d wheels", len(wheels)), Status: Pass}
	want := map[string]string{}
	for _, w := range wheels {
		want[normName(w.Name)] = w.Version
	}
	have := map[string]string{}
	for _, p := range installed {
		have[normName(p[0])] = p[1]
	}
	c.Value = fmt.Sprintf("%d installed", len(have))
	var diffs, ignored []string
	for _, n := range sortedKeys(want) {
		got, ok := have[n]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("missing %s==%s", n, want[n]))
		case !strings.EqualFold(got, want[n]):
			diffs = append(diffs, fmt.Sprintf("%s: lock %s, image %s", n, want[n], got))
		}
	}
	for _, n := range sortedKeys(have) {
		if _, ok := want[n]; ok {
			continue
		}
		if bootstrap[n] {
			ignored = append(ignored, n+"=="+have[n])
			continue
		}
		diffs = append(diffs, fmt.Sprintf("not in the lock %s==%s", n, have[n]))
	}
	if len(diffs) > 0 {
		c.Status = Fail
		c.Value = fmt.Sprintf("%d installed, %d differ", len(have), len(diffs))
		c.Detail = limitJoin(diffs, 40)
	}
	if len(ignored) > 0 {
		c.Detail = strings.TrimPrefix(c.Detail+"; venv bootstrap not in the lock (ignored): "+strings.Join(ignored, " "), "; ")
	}
	return c
}

func limitJoin(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, "; ")
	}
	return strings.Join(s[:n], "; ") + fmt.Sprintf("; ... and %d more", len(s)-n)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

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

	wantCUDA := cudaFromVariant(l.Core.TorchVariant)
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

	dnn := Check{Name: "cudnn.version", Threshold: "== " + l.Core.CUDNN, Status: Pass}
	if t.CUDNN != nil {
		dnn.Value = cudnnString(*t.CUDNN)
	}
	switch {
	case l.Core.CUDNN == "":
		dnn.Status, dnn.Threshold, dnn.Detail = Skip, "", "the lock names no cuDNN"
	case t.CUDNN == nil && cpuOnly:
		dnn.Status, dnn.Detail = Skip, "CPU-only image; torch reports no cuDNN: "+t.CUDNNError
	case t.CUDNN == nil:
		dnn.Status, dnn.Detail = Fail, fmt.Sprintf("lock has cuDNN %s, image's torch reports none %s", l.Core.CUDNN, t.CUDNNError)
	case !cudnnMatches(l.Core.CUDNN, dnn.Value):
		dnn.Status, dnn.Detail = Fail, fmt.Sprintf("lock has cuDNN %s, image has %s", l.Core.CUDNN, dnn.Value)
	}
	out = append(out, dnn)

	nc := Check{Name: "nccl.version", Value: deref(t.NCCL), Threshold: "== " + l.Core.NCCL, Status: Pass}
	switch {
	case l.Core.NCCL == "":
		nc.Status, nc.Threshold, nc.Detail = Skip, "", "the lock names no NCCL"
	case t.NCCL == nil && cpuOnly:
		nc.Status, nc.Detail = Skip, "CPU-only image; torch reports no NCCL: "+t.NCCLError
	case t.NCCL == nil:
		nc.Status, nc.Detail = Fail, fmt.Sprintf("lock has NCCL %s, image's torch reports none %s", l.Core.NCCL, t.NCCLError)
	case !version.HasPrefix(*t.NCCL, l.Core.NCCL):
		nc.Status, nc.Detail = Fail, fmt.Sprintf("lock has NCCL %s, image has %s", l.Core.NCCL, *t.NCCL)
	}
	out = append(out, nc)

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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}
