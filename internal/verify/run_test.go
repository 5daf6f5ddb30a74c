package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
)

// fakeRuntime answers each probe with a canned output line.
type fakeRuntime struct {
	mu    sync.Mutex
	out   map[string]string // probe name -> stdout
	errs  map[string]error
	calls []Probe
}

func (*fakeRuntime) Name() string { return "fake" }
func (*fakeRuntime) Close() error { return nil }
func (f *fakeRuntime) Exec(_ context.Context, p Probe) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, p)
	return []byte(f.out[p.Name]), f.errs[p.Name]
}

type fakeProber struct {
	h   Host
	err error
}

func (f fakeProber) Probe(context.Context) (Host, error) { return f.h, f.err }

func h200s(n int) Host {
	h := Host{Hostname: "gpu-1", DriverVersion: "580.159.04", CUDADriver: "13.0"}
	for i := range n {
		h.GPUs = append(h.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "NVIDIA H200", ComputeCapability: "9.0", MemoryMiB: 143771, NVLinks: 18})
	}
	return h
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// machine returns probe outputs of an environment that matches the H200
// testdata lock, as seen on the GPU machine (docs/gpu-runs).
func machine(t *testing.T, l *lock.Lock, gpus int) map[string]string {
	var pkgs [][2]string
	var pins []string
	family := map[string]any{}
	for _, w := range l.Pip {
		pkgs = append(pkgs, [2]string{w.Name, w.Version})
		pins = append(pins, w.Name+"=="+w.Version)
		if w.Name == "torchvision" || w.Name == "torchaudio" {
			f := map[string]any{"version": w.Version}
			if w.Name == "torchvision" && gpus > 0 {
				f["nms"] = []int{0, 2}
			}
			family[w.Name] = f
		}
	}
	shm := int64(256 << 30)
	env := map[string]any{
		"probe": "env", "python": "3.12.3", "executable": "/opt/torch/.venv/bin/python3", "packages": pkgs,
		"shm_bytes": shm, "tmpdir_writable": true,
		"env": map[string]string{
			"TMPDIR": l.Runtime.TmpDir, "TORCHINDUCTOR_CACHE_DIR": l.Runtime.Caches.Inductor,
			"TRITON_CACHE_DIR": l.Runtime.Caches.Triton, "HF_HOME": l.Runtime.Caches.HF,
		},
		"fingerprint": map[string]any{"path": l.Runtime.FingerprintPath, "present": true, "content": map[string]any{"version": 1, "image": map[string]string{"name": l.Name}}},
		// An image imagectl built: its pip constraints pin the lock's
		// wheels, and pip refused another torch in the dry runs.
		"pip_guard": map[string]any{"constraint": "/etc/pip/constraint.txt", "pins": pins, "tried": "torch==0.0.1",
			"refused": true, "refusal": "ERROR: Cannot install torch==0.0.1", "unconstrained_ok": true, "new_ok": true},
	}
	var devs []map[string]string
	for range gpus {
		devs = append(devs, map[string]string{"name": "NVIDIA H200", "capability": "9.0"})
	}
	tor := map[string]any{"probe": "torch", "driver": "580.159.04", "torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91900,
		"nccl": "2.28.9", "cuda_available": gpus > 0, "device_count": gpus, "devices": devs, "arch_list": l.Core.Archs, "family": family}
	ar := map[string]any{"probe": "allreduce", "bytes": 256 << 20, "iters": 20, "world_size": gpus, "ok": true, "first": 3.0, "want": 3.0,
		"seconds_per_iter": 0.0009, "algbw_gbps": 298.2, "busbw_gbps": 298.2}
	cold := map[string]any{"probe": "compile-cold", "ok": true, "device": "cuda", "first_call_s": 3.1, "inductor": map[string]int{"fxgraph_cache_miss": 1}}
	warm := map[string]any{"probe": "compile-warm", "ok": true, "device": "cuda", "first_call_s": 1.0, "inductor": map[string]int{"fxgraph_cache_hit": 1}, "aot_autograd": map[string]int{"autograd_cache_hit": 1}}
	return map[string]string{
		"env":          "noise\n" + mustJSON(t, env) + "\n",
		"torch":        mustJSON(t, tor),
		"allreduce":    "NCCL INFO ring\n" + mustJSON(t, ar),
		"compile-cold": mustJSON(t, cold),
		"compile-warm": mustJSON(t, warm),
	}
}

func readLock(t *testing.T, path string) *lock.Lock {
	t.Helper()
	l, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func statuses(res *Result) map[string]Check {
	m := map[string]Check{}
	for _, c := range res.Checks {
		m[c.Name] = c
	}
	return m
}

var testRef = func() name.Digest {
	d, err := name.NewDigest("localhost:5000/pytorch@sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		panic(err)
	}
	return d
}()

func TestRunPasses(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	rt := &fakeRuntime{out: machine(t, l, 2)}
	res, err := Run(context.Background(), l, WithRuntime(rt), WithGPUProber(fakeProber{h: h200s(2)}), WithImage(testRef))
	if err != nil {
		for _, c := range res.Checks {
			t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
		}
		t.Fatalf("Run() error = %v, want nil", err)
	}
	if !res.Passed || res.Digest != testRef.DigestStr() || res.LockDigest != l.Digest || len(res.Host.GPUs) != 2 {
		t.Errorf("Run() = passed %v digest %q lock %q gpus %d", res.Passed, res.Digest, res.LockDigest, len(res.Host.GPUs))
	}
	c := statuses(res)
	for n, want := range map[string]Status{"gpu.visible": Pass, "driver.version": Pass, "nccl.allreduce.busbw": Pass, "compile.cache": Pass, "pip.packages": Pass, "init.fingerprint": Pass} {
		if c[n].Status != want {
			t.Errorf("check %s = %s (%s), want %s", n, c[n].Status, c[n].Detail, want)
		}
	}
	// torch and compile-cold may run side by side; the timed all-reduce
	// runs alone, after both; the warm compile comes last.
	at := map[string]int{}
	for i, p := range rt.calls {
		at[p.Name] = i
		if !p.GPU {
			t.Errorf("probe %s ran without GPUs on a GPU host", p.Name)
		}
	}
	if len(rt.calls) != 5 || at["env"] != 0 || at["allreduce"] != 3 || at["compile-warm"] != 4 {
		t.Errorf("probe order %v, want env, {torch, compile-cold}, allreduce, compile-warm", at)
	}
	// Both compile runs share one fresh folder under the init's cache.
	cold, warm := rt.calls[at["compile-cold"]].Args, rt.calls[at["compile-warm"]].Args
	if cold[1] != warm[1] || !strings.HasPrefix(cold[1], l.Runtime.Caches.Inductor+"/imagectl-verify-") {
		t.Errorf("compile cache dirs %q and %q, want one folder under %s", cold[1], warm[1], l.Runtime.Caches.Inductor)
	}
}

// TestRunDrift checks a torch 2.6 lock against the torch 2.11 machine: every
// drifted version is named with both sides, and the exit code is 4.
func TestRunDrift(t *testing.T) {
	h200 := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	l := readLock(t, "testdata/torch2.6-cu124.lock.json")
	rt := &fakeRuntime{out: machine(t, h200, 2)}
	res, err := Run(context.Background(), l, WithRuntime(rt), WithGPUProber(fakeProber{h: h200s(2)}))
	var fe *FailedError
	if !errors.As(err, &fe) || exitcode.Code(err) != exitcode.VerifyFailed {
		t.Fatalf("Run() error = %v (code %d), want *FailedError with code %d", err, exitcode.Code(err), exitcode.VerifyFailed)
	}
	c := statuses(res)
	for n, both := range map[string][]string{
		"torch.version":  {"2.6.0+cu124", "2.11.0+cu130"},
		"cuda.runtime":   {"12.4", "13.0"},
		"cudnn.version":  {"9.1.0.70", "9.19.0"},
		"nccl.version":   {"2.21.5", "2.28.9"},
		"python.version": {"3.11", "3.12.3"},
		"pip.packages":   {"torch: lock 2.6.0+cu124, image 2.11.0", "missing nvidia-nccl-cu12==2.21.5"},
	} {
		if c[n].Status != Fail {
			t.Errorf("check %s = %s, want fail", n, c[n].Status)
		}
		for _, s := range both {
			if !strings.Contains(c[n].Detail, s) {
				t.Errorf("check %s detail %q does not name %q", n, c[n].Detail, s)
			}
		}
	}
	if c["driver.version"].Status != Pass {
		t.Errorf("driver.version = %s, want pass (580 >= 525.60.13)", c["driver.version"].Status)
	}
}

func TestRunNoGPU(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	noGPU := fakeProber{h: Host{Hostname: "ci"}, err: fmt.Errorf("%w: NVML: ERROR_LIBRARY_NOT_FOUND", ErrNoGPU)}

	t.Run("gpu image fails", func(t *testing.T) {
		rt := &fakeRuntime{out: machine(t, l, 0)}
		res, err := Run(context.Background(), l, WithRuntime(rt), WithGPUProber(noGPU))
		if exitcode.Code(err) != exitcode.VerifyFailed {
			t.Fatalf("Run() error = %v, want exit code %d", err, exitcode.VerifyFailed)
		}
		c := statuses(res)
		if c["gpu.visible"].Status != Fail || c["gpu.visible"].Value != "no GPU visible" {
			t.Errorf("gpu.visible = %+v, want fail with value \"no GPU visible\"", c["gpu.visible"])
		}
		if c["nccl.allreduce"].Status != Skip || c["compile.cache"].Status != Skip {
			t.Errorf("all-reduce %s, compile %s, want both skipped", c["nccl.allreduce"].Status, c["compile.cache"].Status)
		}
		for _, p := range rt.calls {
			if p.GPU {
				t.Errorf("probe %s asked for GPUs on a host without any", p.Name)
			}
		}
	})

	t.Run("cpu-only image passes with skips", func(t *testing.T) {
		cpu := *l
		cpu.Verify.CPUOnly = true
		cpu.Verify.CompileCache = false
		rt := &fakeRuntime{out: machine(t, l, 0)}
		res, err := Run(context.Background(), &cpu, WithRuntime(rt), WithGPUProber(noGPU))
		if err != nil {
			t.Fatalf("Run() error = %v, want nil", err)
		}
		c := statuses(res)
		for _, n := range []string{"gpu.visible", "driver.version", "cuda.available", "nccl.allreduce"} {
			if c[n].Status != Skip {
				t.Errorf("check %s = %s, want skip", n, c[n].Status)
			}
		}
	})
}

func TestRunThresholds(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	for _, tc := range []struct {
		name   string
		edit   func(out map[string]string)
		lockFn func(l *lock.Lock)
		host   Host
		failed string
	}{
		{name: "busbw below floor", lockFn: func(l *lock.Lock) { l.Verify.MinBusBandwidthGBps = 400 }, failed: "nccl.allreduce.busbw"},
		{name: "wrong sum", edit: func(o map[string]string) {
			o["allreduce"] = `{"probe":"allreduce","world_size":2,"ok":false,"bad_elements":7,"first":2,"want":3}`
		}, failed: "nccl.allreduce"},
		{name: "warm compile misses", edit: func(o map[string]string) {
			o["compile-warm"] = `{"probe":"compile-warm","ok":true,"inductor":{"fxgraph_cache_miss":1}}`
		}, failed: "compile.cache"},
		{name: "driver below floor", host: func() Host { h := h200s(2); h.DriverVersion = "570.86.10"; return h }(), failed: "driver.version"},
		{name: "too few GPUs", host: h200s(1), failed: "gpu.count"},
		{name: "blackwell gpu not in archs", lockFn: func(l *lock.Lock) { l.Core.Archs = []string{"sm_80", "sm_90"} },
			host: func() Host { h := h200s(2); h.GPUs[1].ComputeCapability = "10.0"; return h }(), failed: "gpu.compute_capability"},
		{name: "shm too small", edit: func(o map[string]string) {
			o["env"] = strings.Replace(o["env"], `"shm_bytes":274877906944`, `"shm_bytes":67108864`, 1)
		}, failed: "shm.size"},
		{name: "fingerprint missing", edit: func(o map[string]string) {
			o["env"] = strings.Replace(o["env"], `"present":true`, `"present":false`, 1)
		}, failed: "init.fingerprint"},
		{name: "started from another image", edit: func(o map[string]string) {
			o["env"] = strings.Replace(o["env"], `"content":{`, `"content":{"image_digest":"sha256:`+strings.Repeat("cd", 32)+`",`, 1)
		}, failed: "init.fingerprint"},
		{name: "extra wheel", edit: func(o map[string]string) {
			o["env"] = strings.Replace(o["env"], `"packages":[`, `"packages":[["evil-pkg","1.0"],`, 1)
		}, failed: "pip.packages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ll := *l
			if tc.lockFn != nil {
				tc.lockFn(&ll)
			}
			out := machine(t, l, 2)
			if tc.edit != nil {
				tc.edit(out)
			}
			host := tc.host
			if host.GPUs == nil {
				host = h200s(2)
			}
			res, err := Run(context.Background(), &ll, WithRuntime(&fakeRuntime{out: out}), WithGPUProber(fakeProber{h: host}), WithImage(testRef))
			var fe *FailedError
			if !errors.As(err, &fe) {
				t.Fatalf("Run() error = %v, want *FailedError", err)
			}
			if !strings.Contains(strings.Join(fe.Failed, ","), tc.failed) {
				t.Errorf("failed checks %v, want %s among them", fe.Failed, tc.failed)
			}
			if res.Passed {
				t.Errorf("Result.Passed = true with failed checks")
			}
		})
	}
}

func TestRunNotRun(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	rt := &fakeRuntime{out: map[string]string{}, errs: map[string]error{"env": &ProbeError{Probe: "env", Err: errors.New("exec: \"python3\": executable file not found")}}}
	_, err := Run(context.Background(), l, WithRuntime(rt), WithGPUProber(fakeProber{h: h200s(2)}))
	var nr *NotRunError
	if !errors.As(err, &nr) || exitcode.Code(err) != exitcode.VerifyNotRun {
		t.Fatalf("Run() error = %v (code %d), want *NotRunError with code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
	}
}

// TestRunRecorded evaluates a Kubernetes Job log: host facts come from the
// torch probe (driver from /proc, devices from torch).
func TestRunRecorded(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	out := machine(t, l, 2)
	var log strings.Builder
	for _, n := range []string{"env", "torch", "allreduce", "compile-cold", "compile-warm"} {
		log.WriteString(out[n] + "\n")
	}
	res, err := Run(context.Background(), l, WithRuntime(&Recorded{Log: []byte(log.String())}), WithGPUProber(nil))
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if res.Runtime != "kubernetes" || res.Host.DriverVersion != "580.159.04" || len(res.Host.GPUs) != 2 {
		t.Errorf("Run() runtime %q driver %q gpus %d, want kubernetes 580.159.04 2", res.Runtime, res.Host.DriverVersion, len(res.Host.GPUs))
	}
}

// TestRunLockedInterpreter checks that the probes run the lock's
// interpreter: the venv's python (ImagePython), passed to the runtime, and a
// python.version failure when the image's python is another binary.
func TestRunLockedInterpreter(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	l.Python = lock.Python{Version: "3.12.3", Path: "/usr/bin/python3.12", Provider: "apt"}
	for _, tc := range []struct {
		name, real string
		want       Status
	}{
		{"same interpreter", "/usr/bin/python3.12", Pass},
		{"another interpreter", "/opt/conda/bin/python3.12", Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := machine(t, l, 2)
			var env map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(out["env"], "noise\n")), &env); err != nil {
				t.Fatal(err)
			}
			env["real_executable"], env["locked_interpreter"] = tc.real, "/usr/bin/python3.12"
			out["env"] = mustJSON(t, env)
			rt := &fakeRuntime{out: out}
			res, _ := Run(context.Background(), l, WithRuntime(rt), WithGPUProber(fakeProber{h: h200s(2)}))
			if c := statuses(res)["python.version"]; c.Status != tc.want || (tc.want == Fail && !strings.Contains(c.Detail, tc.real)) {
				t.Errorf("python.version = %+v, want %s naming %s", c, tc.want, tc.real)
			}
			for _, p := range rt.calls {
				if p.Python != "/opt/venv/bin/python" {
					t.Errorf("probe %s ran with python %q, want the venv's /opt/venv/bin/python", p.Name, p.Python)
				}
				if p.Name == "env" && !strings.Contains(strings.Join(p.Args, " "), "--interpreter /usr/bin/python3.12") {
					t.Errorf("env probe args %q lack --interpreter /usr/bin/python3.12", p.Args)
				}
			}
		})
	}
}
