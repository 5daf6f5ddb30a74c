package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/atomicfile"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/sign"
	"imagectl/internal/verify"
	"imagectl/internal/verify/containerd"
	"imagectl/internal/verify/kubernetes"
	"imagectl/internal/verify/podman"
	"imagectl/internal/verify/runtimes"
)

type verifyFlags struct {
	out                                   outputFlag
	lockPath                              string
	runtime                               string
	python                                string
	from                                  string
	storage                               string
	gpus                                  string
	shmSize                               string
	podArgs                               []string
	gpuCount                              int
	containerd, ctrNamespace, snapshotter string
	unpacks                               int
	cdiDirs                               []string
	jobLog                                string
	renderJob, keep                       bool
	kube                                  kubeFlags
	iters                                 int
	warmup                                int
	sign                                  bool
	key                                   string
	startup                               bool
	startupFiles                          string
}

func newVerifyCmd() *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify IMAGE@DIGEST --lock LOCK",
		Short: "Verify an image on real GPUs against its lock",
		Long: `Verify proves that an image does what its lock says. Host facts come from
NVML (driver >= the locked floor, GPU count and names, compute capability within
the torch wheel's archs, MIG, NVLink); Python probes run inside the image check
the interpreter and the wheel set, torch/CUDA/cuDNN/NCCL versions,
torch.cuda.is_available(), an NCCL all-reduce over every GPU (sum and bus
bandwidth against verify.min_busbw_gbps), torch.compile cache reuse across two
processes, /dev/shm, TMPDIR, the cache paths and the init's fingerprint.

Runtimes (--runtime; auto picks one and prints which):
  containerd  pulls IMAGE@DIGEST into containerd and runs each probe in a fresh
              container through the image's entrypoint, GPUs by CDI, network off
  podman      a fresh container per probe (docker: --runtime docker)
  in-place    imagectl runs inside the image (a CI job on a GPU runner)
  kubernetes  a batch/v1 Job on a GPU node, driven through the API server
              (--kubeconfig, else $KUBECONFIG, ~/.kube/config or in-cluster):
              server-side apply, watch until it ends or verify.timeout, the
              pod's log evaluated, then the Job deleted (--keep leaves it);
              --render-job only prints the ConfigMap + Job, --job-log
              evaluates a log copied back by hand (never signable)

A result is signed (--sign) only when something proves the probes ran inside
IMAGE@DIGEST: a container runtime started that digest (for a Job: the imageID
the kubelet reported for the pod, read from the API server), or (in-place)
the init's fingerprint names it (IMAGECTL_IMAGE_DIGEST). Otherwise it is
printed and not signed (exit 1).

An image index (a multi-platform build; the lock has platforms) is verified
for this host's platform: its child image of that platform runs with that
platform's view of the lock, the result is bound to (and signed for) that
child, and the others are reported "not verified" under platforms.

Exit codes: 0 passed, 4 a check failed, 7 verification could not run (for a
Job: no node offers nvidia.com/gpu, the image cannot be pulled, the pod was
OOM-killed or evicted, verify.timeout passed, RBAC forbids a call), 77 the
kubelet's pull was refused with 401.`,
		Example: `  # inside the image, on a GPU runner
  imagectl verify reg.example/team/pytorch@sha256:... --lock images/pytorch-2.6-cu118-py3.11/lock.json --runtime in-place

  # containerd: pulled by digest, a fresh container per probe, GPUs by CDI, signed
  imagectl verify reg/pytorch@sha256:... --lock images/x/lock.json --runtime containerd \
    --storage /mnt/storage --sign --key verifier.key

  # podman, one GPU per container
  imagectl verify reg/pytorch@sha256:... --lock images/x/lock.json --runtime podman --gpu-count 1

  # a Job on the GPU fleet, watched to the end, proven by the kubelet's imageID, signed
  imagectl verify reg/pytorch@sha256:... --lock images/x/lock.json --runtime kubernetes \
    --kubeconfig ~/.kube/gpu-fleet --namespace imagectl-verify --storage-claim verify-cache --sign --key verifier.key

  # only print the ConfigMap + Job
  imagectl verify reg/pytorch@sha256:... --lock images/x/lock.json --runtime kubernetes --render-job | kubectl apply -f -`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd, args[0], &f)
		},
	}
	fl := cmd.Flags()
	addOutputFlag(cmd, &f.out)
	fl.StringVar(&f.lockPath, "lock", "", "the image's lock file (required)")
	fl.StringVar(&f.runtime, "runtime", "auto", "auto, containerd, podman, docker, in-place or kubernetes (auto: containerd when its socket answers, else podman, else docker, else in-place only inside IMAGE itself)")
	fl.StringVar(&f.python, "python", "", "the image's Python (default: /opt/venv/bin/python if present, else python3)")
	fl.StringVar(&f.from, "from", "", "podman/docker: what to run instead of IMAGE@DIGEST, e.g. oci:DIR or oci-archive:FILE")
	fl.StringVar(&f.storage, "storage", "", "container runtimes: host folder mounted at the lock's runtime.storage.path (default: a throwaway ready folder)")
	fl.StringVar(&f.gpus, "gpus", "cdi", "podman/docker: how GPUs are passed: cdi (--device nvidia.com/gpu=all) or docker (--gpus all)")
	fl.StringVar(&f.shmSize, "shm-size", "", "container runtimes: /dev/shm size, e.g. 2Gi or 1g (default: the lock's min_shm_bytes, at least 1Gi)")
	fl.IntVar(&f.gpuCount, "gpu-count", 0, "containerd/podman/docker: GPUs given to each container (default 0: all, nvidia.com/gpu=all)")
	fl.StringVar(&f.containerd, "containerd-address", "", "containerd: socket (default $CONTAINERD_ADDRESS, else "+containerd.DefaultAddress+")")
	fl.StringVar(&f.ctrNamespace, "containerd-namespace", "", "containerd: namespace for the image and the probe containers (default $CONTAINERD_NAMESPACE, else imagectl)")
	fl.StringVar(&f.snapshotter, "snapshotter", "overlayfs", "containerd: snapshotter that unpacks the image")
	fl.IntVar(&f.unpacks, "unpack-concurrency", containerd.DefaultUnpackConcurrency, "containerd: layers unpacked at once while pulling (1: one at a time; a snapshotter that cannot rebase, such as stargz, always unpacks one at a time)")
	fl.StringArrayVar(&f.cdiDirs, "cdi-spec-dir", nil, "containerd: folder of CDI specs (repeatable; default /etc/cdi and /var/run/cdi)")
	fl.StringArrayVar(&f.podArgs, "podman-arg", nil, "podman/docker: extra argument for `run` (repeatable)")
	fl.StringVar(&f.jobLog, "job-log", "", "kubernetes: evaluate this Job log (copied back by hand; never signable) instead of running the Job")
	fl.BoolVar(&f.renderJob, "render-job", false, "kubernetes: print the ConfigMap and the Job instead of running them")
	fl.BoolVar(&f.keep, "keep", false, "kubernetes: leave the Job, its pod and the ConfigMap in place (debugging)")
	f.kube.add(cmd) // --kubeconfig, --context, --namespace, --storage-claim
	fl.IntVar(&f.iters, "iters", 20, "timed all-reduce iterations")
	fl.IntVar(&f.warmup, "warmup", 5, "warm-up all-reduce iterations")
	fl.BoolVar(&f.startup, "startup", false, "time the image's first step first: from the runtime's first call (the pull) to the end of a first matmul after import torch (check startup.first_step)")
	fl.StringVar(&f.startupFiles, "startup-files", "", "with --startup (implied): write the image files that first step took, one per line, to this file (imagectl build --prioritized-files reads it)")
	fl.BoolVar(&f.sign, "sign", false, "sign the result as an in-toto attestation on the image (needs --key)")
	fl.StringVar(&f.key, "key", "", "the verifier key for --sign; password from IMAGECTL_VERIFIER_PASSWORD, else IMAGECTL_SIGNING_PASSWORD or COSIGN_PASSWORD")
	_ = cmd.MarkFlagRequired("lock")
	return cmd
}

func runVerify(cmd *cobra.Command, image string, f *verifyFlags) error {
	asJSON, ref, err := f.usage(image)
	if err != nil {
		return err
	}
	l, err := lock.Read(f.lockPath)
	if err != nil {
		return err
	}
	sub, err := verify.SubjectOf(cmd.Context(), ref, l, accessOf(cmd))
	if err != nil {
		return err
	}
	if t := sub.Target; t != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "verify: %s is an image index; verifying its %s image %s here, the others are not verified on this host\n", ref, t.Platform, t.Image.DigestStr())
	}
	ref, l = sub.Image, sub.Lock
	if f.renderJob { // jobFlagsUsage: only with --runtime kubernetes
		return printJob(cmd.OutOrStdout(), l, ref, f, asJSON)
	}
	opts, err := f.runtimeRun(cmd, l, ref)
	if err != nil {
		return err
	}
	opts = append(append(sub.Options(), verify.WithAllReduceIters(f.iters, f.warmup), verify.WithStartup(f.startup)), opts...)
	res, verr := verify.Run(cmd.Context(), l, opts...)
	if err := writeStartupFiles(cmd.ErrOrStderr(), f.startupFiles, res); err != nil {
		return err
	}
	var notRun *verify.NotRunError
	if res != nil && (asJSON || !errors.As(verr, &notRun)) {
		if err := printResult(cmd.OutOrStdout(), res, asJSON); err != nil {
			return err
		}
		if f.sign {
			if err := signResult(cmd, ref, res, f.key); err != nil {
				return err
			}
		}
	}
	return verr
}

// usage checks the flags and IMAGE before anything runs (exit 2).
func (f *verifyFlags) usage(image string) (asJSON bool, ref name.Digest, err error) {
	if asJSON, err = f.out.json(); err != nil {
		return false, ref, err
	}
	if ref, err = name.NewDigest(image); err != nil {
		return false, ref, exitcode.Wrap(exitcode.Usage, fmt.Errorf("%q: verify takes an image by digest (repo@sha256:...): %w", image, err))
	}
	if f.sign && f.key == "" {
		return false, ref, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--sign needs --key"))
	}
	if err := jobFlagsUsage(f); err != nil {
		return false, ref, exitcode.Wrap(exitcode.Usage, err)
	}
	f.startup = f.startup || f.startupFiles != ""
	if f.startup && f.runtime == verify.RuntimeKubernetes {
		return false, ref, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--startup needs a runtime that runs probes one by one (containerd, podman, docker, in-place): the Kubernetes Job runs its fixed probe script"))
	}
	return asJSON, ref, nil
}

// runtimeRun returns the Run options of the runtime the flags name: a Job log
// read back (--job-log), else the runtime runtimes.Select picks, named on
// stderr, for the image ref of lock l. Run closes it.
func (f *verifyFlags) runtimeRun(cmd *cobra.Command, l *lock.Lock, ref name.Digest) ([]verify.Option, error) {
	if f.jobLog != "" {
		b, err := os.ReadFile(f.jobLog)
		if err != nil {
			return nil, err
		}
		return []verify.Option{verify.WithRuntime(&verify.Recorded{Log: b}), verify.WithGPUProber(nil)}, nil
	}
	sel, err := runtimes.Select(cmd.Context(), f.runtime, f.runtimeOptions(cmd, ref)...)
	if err != nil {
		return nil, err
	}
	printRuntime(cmd.ErrOrStderr(), "verify", sel.Kind, sel.Reason)
	rt, err := sel.Runtime(l, ref)
	if err != nil {
		return nil, err
	}
	return []verify.Option{verify.WithRuntime(rt), verify.WithRegistryAccess(accessOf(cmd))}, nil
}

// writeStartupFiles writes the files the first step took (--startup-files).
func writeStartupFiles(w io.Writer, path string, res *verify.Result) error {
	if path == "" || res == nil || res.Startup == nil {
		return nil
	}
	if err := atomicfile.Write(path, []byte(verify.StartupFilesText(res)), 0o644); err != nil {
		return fmt.Errorf("writing --startup-files: %w", err)
	}
	fmt.Fprintf(w, "verify: %d files of the first step written to %s\n", res.Startup.FileCount, path)
	return nil
}

// runtimeOptions map the runtime flags to the selection's common settings
// and each runtime's own options.
func (f *verifyFlags) runtimeOptions(cmd *cobra.Command, ref name.Digest) []runtimes.Option {
	return []runtimes.Option{
		runtimes.WithAutoInPlace(&ref), runtimes.WithFrom(f.from), runtimes.WithPython(f.python), runtimes.WithStorage(f.storage),
		runtimes.WithShmSize(f.shmSize), runtimes.WithGPUs(f.gpuCount), runtimes.WithContainerdAddress(f.containerd),
		runtimes.WithContainerd(containerd.WithNamespace(f.ctrNamespace), containerd.WithSnapshotter(f.snapshotter), containerd.WithUnpackConcurrency(f.unpacks),
			containerd.WithCDISpecDirs(f.cdiDirs...), containerd.WithTLS(accessOf(cmd).TLSConfig())),
		runtimes.WithPodman(podman.WithGPUMode(f.gpus), podman.WithExtraArgs(f.podArgs...)),
		runtimes.WithKubernetes(append(f.kube.options(), kubernetes.WithKeep(f.keep), kubernetes.WithAllReduceIters(f.iters, f.warmup))...),
	}
}

// jobFlagsUsage refuses --render-job and --job-log where they would be
// ignored (any runtime but kubernetes would run a real verification) or
// would leave another flag unread.
func jobFlagsUsage(f *verifyFlags) error {
	var set []string
	if f.renderJob {
		set = append(set, "--render-job")
	}
	if f.jobLog != "" {
		set = append(set, "--job-log")
	}
	switch {
	case len(set) == 0:
		return nil
	case len(set) == 2:
		return fmt.Errorf("--render-job prints the Job and --job-log evaluates its log: give one")
	case f.runtime != verify.RuntimeKubernetes:
		return fmt.Errorf("%s needs --runtime %s (got --runtime %s)", set[0], verify.RuntimeKubernetes, f.runtime)
	case f.renderJob && f.sign:
		return fmt.Errorf("--render-job prints the Job without running it: there is no result for --sign")
	case f.jobLog != "" && f.sign:
		return fmt.Errorf("--job-log results are never signed (nothing ties a copied log to the digest): drop --sign, or run the Job with --runtime %s alone", verify.RuntimeKubernetes)
	}
	return nil
}

// printRuntime names the runtime on stderr, with what auto detected.
func printRuntime(w io.Writer, who, kind, reason string) {
	if reason != "" {
		fmt.Fprintf(w, "%s: runtime %s (auto: %s)\n", who, kind, reason)
	} else {
		fmt.Fprintf(w, "%s: runtime %s\n", who, kind)
	}
}

func printJob(w io.Writer, l *lock.Lock, ref name.Digest, f *verifyFlags, asJSON bool) error {
	cm, job, err := kubernetes.RenderJob(l, ref, kubernetes.JobConfig{Namespace: f.kube.namespace, StorageClaim: f.kube.claim,
		Python: f.python, ShmSize: f.shmSize, Iters: f.iters, Warmup: f.warmup})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{cm, job}})
	}
	b, err := kubernetes.MarshalJob(cm, job)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func signResult(cmd *cobra.Command, ref name.Digest, res *verify.Result, key string) error {
	pw, _ := sign.VerifierPasswordFromEnv()
	if err := verify.Attest(cmd.Context(), ref, res, sign.WithKey(key, pw), sign.WithAccess(accessOf(cmd))); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "signed the verification result of %s (%s)\n", ref, verify.PredicateType)
	return nil
}

func printResult(w io.Writer, res *verify.Result, asJSON bool) error {
	if asJSON {
		return writeJSON(w, res)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tVALUE\tTHRESHOLD\tSECONDS\tDETAIL")
	for _, c := range res.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\n", c.Name, c.Status, c.Value, c.Threshold, c.Seconds, c.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "PASSED"
	if !res.Passed {
		verdict = "FAILED"
	}
	_, err := fmt.Fprintf(w, "%s %s on %s (%s runtime, %d GPU(s), driver %s) in %s\n",
		verdict, res.Image, res.Host.Hostname, res.Runtime, len(res.Host.GPUs), res.Host.DriverVersion, res.Duration)
	return err
}
