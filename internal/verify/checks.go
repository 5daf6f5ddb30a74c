package verify

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"imagectl/internal/lock"
	"imagectl/internal/pep"
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
	out = append(out, pipGuardCheck(l.Pip, e.PipGuard))
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
		c.Detail = "the init's fingerprint is missing: " + cmp.Or(fp.Error, "not found") + " (was the image started through imagectl-init?)"
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

// pipCheck compares the installed distributions with the lock's wheels.
func pipCheck(wheels []lock.Wheel, installed [][2]string) Check {
	c := Check{Name: "pip.packages", Threshold: fmt.Sprintf("== the lock's %d wheels", len(wheels)), Status: Pass}
	want := map[string]string{}
	for _, w := range wheels {
		want[pep.Normalize(w.Name)] = w.Version
	}
	have := map[string]string{}
	for _, p := range installed {
		have[pep.Normalize(p[0])] = p[1]
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
