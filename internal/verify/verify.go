// Package verify proves, on real GPUs, that an image does what its lock
// says. Host facts come from NVML (driver floor, GPUs, compute capability,
// MIG, NVLink); in-image facts from small Python probes run through a
// Runtime, one probe at a time (an Execer) or as one batch (a BatchRuntime,
// such as a Kubernetes Job or its log replayed): interpreter and wheel set,
// torch/CUDA/cuDNN/NCCL versions, CUDA availability, an NCCL all-reduce over
// every GPU with its bus bandwidth, torch.compile cache reuse across two
// processes, /dev/shm, TMPDIR, cache paths and the init's fingerprint.
//
// The Result is the predicate of the verification attestation that
// promotion requires. The runtimes live in packages of their own
// (internal/verify/inplace, podman, containerd, kubernetes), and
// internal/verify/runtimes selects one: this package links none of them.
package verify

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"imagectl/internal/auth"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
)

// DefaultTimeout bounds a verification when the lock sets none.
const DefaultTimeout = 10 * time.Minute

// Run verifies the image described by l with the runtime WithRuntime
// gives and returns the result. When a check fails it returns the result and a *FailedError; when verification
// could not run it returns what it has and a *NotRunError.
func Run(ctx context.Context, l *lock.Lock, opts ...Option) (*Result, error) {
	if l == nil {
		return nil, errors.New("verify: nil lock")
	}
	if len(l.Platforms) > 0 {
		return nil, fmt.Errorf("verify: the lock of %s has platforms %s: verify one platform's image with its view of the lock (verify.ForHost, WithTarget)", l.Name, strings.Join(l.PlatformNames(), ", "))
	}
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	defer o.runtime.Close()
	if _, batch := o.base.(BatchRuntime); batch && o.startup {
		return nil, fmt.Errorf("verify: timing the first step needs a runtime that runs probes one by one: %s runs its whole probe set at once", o.base.Name())
	}
	if t := o.target; t != nil && (t.Lock.Digest != l.Digest || t.Lock.Base.Platform != l.Base.Platform) {
		return nil, fmt.Errorf("verify: the target is the %s image of lock %s, Run was given lock %s (%s)", t.Platform, t.Lock.Digest, l.Digest, l.Base.Platform)
	}
	if err := o.checkPull(ctx); err != nil {
		return nil, err
	}
	start := o.now()
	res := &Result{LockDigest: l.Digest, Runtime: o.runtime.Name(), StartedAt: start.UTC()}
	if o.image != nil {
		res.Image = o.image.String()
		res.Digest = o.image.DigestStr()
	}
	timeout := time.Duration(l.Verify.Timeout)
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	r := &runner{l: l, o: o, res: res}
	runErr := r.run(ctx)
	res.Duration = time.Since(start).Round(time.Millisecond).String()
	if t := o.target; t != nil {
		st := PlatformVerified
		var notRun *NotRunError
		switch {
		case errors.As(runErr, &notRun):
			st = PlatformNotVerified
		case runErr != nil || slices.ContainsFunc(res.Checks, func(c Check) bool { return c.Status == Fail }):
			st = PlatformFailed
		}
		res.Index = t.Index.String()
		res.Platforms = append([]PlatformStatus{{Platform: t.Platform, Digest: t.Image.DigestStr(), Status: st}}, t.Others...)
	}
	if runErr != nil {
		return res, runErr
	}
	var failed []string
	for _, c := range res.Checks {
		if c.Status == Fail {
			failed = append(failed, c.Name)
		}
	}
	res.Passed = len(failed) == 0
	if !res.Passed {
		return res, &FailedError{Image: res.Image, Failed: failed}
	}
	return res, nil
}

// ImagePython is the interpreter the probes run with in an image built
// from l: the venv's python (made from the lock's python.path) when the
// lock has wheels, else python.path itself; "" for a lock that records no
// interpreter (the runtime's default then applies).
func ImagePython(l *lock.Lock) string {
	switch {
	case l.Python.Path == "":
		return ""
	case len(l.Pip) > 0:
		return initconfig.VenvPath + "/bin/python"
	default:
		return l.Python.Path
	}
}

type runner struct {
	l   *lock.Lock
	o   *options
	res *Result
	// batch is a BatchRuntime's output, once it ran.
	batch []byte
}

// exec runs p and decodes its result line into v; it returns the wall time.
func (r *runner) exec(ctx context.Context, p Probe, v any) (float64, error) {
	if p.Python == "" {
		p.Python = ImagePython(r.l)
	}
	t := time.Now()
	var out []byte
	var err error
	switch rt := r.o.base.(type) {
	case BatchRuntime:
		if out = r.batch; len(out) == 0 {
			err = &ProbeError{Probe: p.Name, Err: fmt.Errorf("the %s runtime's output is empty", rt.Name())}
		}
	case Execer:
		out, err = rt.Exec(ctx, p)
	}
	secs := time.Since(t).Seconds()
	logs.From(ctx).Info("probe done", "probe", p.Name, "seconds", fmt.Sprintf("%.2f", secs), "err", err)
	if perr := parseProbe(p.Name, out, v); perr != nil {
		if err != nil {
			return secs, err
		}
		return secs, perr
	}
	return secs, nil
}

func (r *runner) run(ctx context.Context) error {
	l, o := r.l, r.o
	cpuOnly := l.Verify.CPUOnly
	withTorch := l.Core.Torch != ""

	var host Host
	var gpuErr error
	var hostSecs float64
	if o.prober != nil {
		t := time.Now()
		host, gpuErr = o.prober.Probe(ctx)
		hostSecs = time.Since(t).Seconds()
	}
	gpu := o.prober != nil && gpuErr == nil && !cpuOnly

	var startupCheck *Check
	if o.startup {
		st, err := r.startup(ctx, gpu, withTorch)
		c := firstStepCheck(st, err)
		startupCheck = &c
		r.res.Startup = st
	}

	var env envOut
	envArgs := []string{}
	if fp := l.Runtime.FingerprintPath; fp != "" {
		envArgs = append(envArgs, "--fingerprint", fp)
	}
	if l.Python.Path != "" {
		envArgs = append(envArgs, "--interpreter", l.Python.Path)
	}
	var err error
	if b, ok := o.base.(BatchRuntime); ok {
		// The whole probe set runs now, as one batch; each exec below
		// evaluates its probe's line of the output.
		r.batch, err = b.RunBatch(ctx)
	}
	var envSecs float64
	if err == nil {
		envSecs, err = r.exec(ctx, Probe{Name: "env", Script: "env.py", Args: envArgs, GPU: gpu}, &env)
	}
	if err != nil {
		var ae *auth.Error
		var nr *NotRunError
		if errors.As(err, &ae) || errors.As(err, &nr) {
			return err // the runtime said why already (a Kubernetes pull refused: exit 77)
		}
		return &NotRunError{Stage: r.o.runtime.Name() + " probe env", Err: err}
	}
	r.res.Proof = proof(o.base, env, r.res.Digest)
	if pr, ok := o.base.(PodRunner); ok {
		r.res.Pod = pr.RanPod()
	}

	// The first torch.compile runs beside the torch probe (both spend most
	// of their time importing torch), never beside the all-reduce, which is
	// timed. Only when the host facts already say where it will run.
	cacheDir := path.Join(r.cacheParent(env), "imagectl-verify-"+RandomHex(6))
	device := "cuda"
	if cpuOnly {
		device = "cpu"
	}
	var cold compileOut
	var coldErr error
	var coldSecs float64
	var coldDone chan struct{}
	coldProbe := Probe{Name: "compile-cold", Script: "compile.py", GPU: gpu,
		Args: []string{"--cache-dir", cacheDir, "--phase", "cold", "--device", device}}
	if withTorch && l.Verify.CompileCache && o.prober != nil && (gpu || cpuOnly) {
		coldDone = make(chan struct{})
		go func() {
			defer close(coldDone)
			coldSecs, coldErr = r.exec(ctx, coldProbe, &cold)
		}()
	}
	waitCold := func() {
		if coldDone != nil {
			<-coldDone
		}
	}
	defer waitCold()

	var tor torchOut
	var torchErr error
	var torchSecs float64
	if withTorch {
		torchSecs, torchErr = r.exec(ctx, Probe{Name: "torch", Script: "torchinfo.py", GPU: gpu}, &tor)
		if torchErr == nil && tor.Error != "" {
			torchErr = errors.New(tor.Error)
		}
	}
	if o.prober == nil {
		host, gpuErr = hostFromTorch(tor, withTorch, torchErr)
		gpu = gpuErr == nil && !cpuOnly
	}
	if r.res.Pod != nil {
		host.Hostname = cmp.Or(host.Hostname, r.res.Pod.Node)
	}
	host.Hostname = cmp.Or(host.Hostname, hostname())
	r.res.Host = host

	r.add(hostChecks(l, host, gpuErr, hostSecs, o.prober == nil)...)
	if startupCheck != nil {
		r.add(*startupCheck)
	}
	r.add(envChecks(l, env, r.res.Digest, envSecs)...)
	if !withTorch {
		r.add(Check{Name: "torch.import", Status: Skip, Detail: "the lock has no torch"})
		return nil
	}
	if torchErr != nil {
		r.add(Check{Name: "torch.import", Status: Fail, Detail: torchErr.Error(), Seconds: torchSecs})
		return nil
	}
	r.add(torchChecks(l, tor, gpu, len(host.GPUs), torchSecs)...)
	cudaOK := gpu && tor.CUDAAvailable && tor.DeviceCount > 0

	waitCold()
	// NCCL all-reduce over every visible GPU.
	switch {
	case cpuOnly:
		r.add(Check{Name: CheckAllReduce, Status: Skip, Detail: "CPU-only image"})
	case !cudaOK:
		r.add(Check{Name: CheckAllReduce, Status: Skip, Detail: "no GPU visible"})
	default:
		nbytes := l.Verify.AllReduceBytes
		if nbytes <= 0 {
			nbytes = 256 << 20
		}
		var ar allReduceOut
		secs, err := r.exec(ctx, Probe{Name: "allreduce", Script: "allreduce.py", GPU: true, Args: []string{
			"--bytes", fmt.Sprint(nbytes), "--iters", fmt.Sprint(o.iters), "--warmup", fmt.Sprint(o.warmup),
		}}, &ar)
		r.add(allReduceChecks(l, ar, err, secs)...)
	}

	// torch.compile, then again in a fresh process with the same cache.
	switch {
	case !l.Verify.CompileCache:
		r.add(Check{Name: CheckCompileCache, Status: Skip, Detail: "verify.compile_cache is off in the lock"})
	case !cudaOK && !cpuOnly:
		r.add(Check{Name: CheckCompileCache, Status: Skip, Detail: "no GPU visible"})
	default:
		if coldDone == nil {
			coldProbe.GPU = gpu
			coldSecs, coldErr = r.exec(ctx, coldProbe, &cold)
		}
		var warm compileOut
		var warmSecs float64
		var warmErr error
		if coldErr == nil {
			warmSecs, warmErr = r.exec(ctx, Probe{Name: "compile-warm", Script: "compile.py", GPU: gpu,
				Args: []string{"--cache-dir", cacheDir, "--phase", "warm", "--device", device, "--remove-after"}}, &warm)
		}
		r.add(compileCheck(cold, warm, coldErr, warmErr, coldSecs+warmSecs))
	}
	return nil
}

func (r *runner) add(c ...Check) { r.res.Checks = append(r.res.Checks, c...) }

// cacheParent is where the compile-cache check makes its fresh folder: on
// the same file system as the cache the init configured.
func (r *runner) cacheParent(env envOut) string {
	return cmp.Or(env.Env["TORCHINDUCTOR_CACHE_DIR"], r.l.Runtime.Caches.Inductor, "/tmp")
}

// hostFromTorch builds host facts from the torch probe, for runtimes whose
// host cannot be asked through NVML (a Kubernetes node).
func hostFromTorch(t torchOut, withTorch bool, torchErr error) (Host, error) {
	h := Host{DriverVersion: t.Driver}
	switch {
	case !withTorch:
		return h, fmt.Errorf("%w: the image has no torch to ask and no NVML prober was given", ErrNoGPU)
	case torchErr != nil:
		return h, fmt.Errorf("%w: %v", ErrNoGPU, torchErr)
	case !t.CUDAAvailable || t.DeviceCount == 0:
		return h, fmt.Errorf("%w: torch.cuda.is_available() is false", ErrNoGPU)
	}
	for i, d := range t.Devices {
		h.GPUs = append(h.GPUs, GPU{Index: i, Name: d.Name, ComputeCapability: d.Capability})
	}
	return h, nil
}

// RandomHex is n random bytes in hex: the suffix of the names runtimes give
// what they create (containers, Jobs, storage folders).
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
