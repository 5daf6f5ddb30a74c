package verify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/api/resource"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
)

// ShmBytes is the /dev/shm size verification gives the image's containers:
// the lock's runtime.min_shm_bytes, at least 1 GiB.
func ShmBytes(l *lock.Lock) int64 {
	if l != nil && l.Runtime.MinShmBytes > 1<<30 {
		return l.Runtime.MinShmBytes
	}
	return 1 << 30
}

// ParseShmSize reads a /dev/shm size: a Kubernetes quantity (1Gi, 512Mi,
// 2G) or a podman-style size (1g, 512m, 64k), or a bare number of bytes.
func ParseShmSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if n := len(t); n > 0 {
		// podman's suffixes are binary; a Kubernetes "m" would be milli.
		if bin, ok := map[byte]string{'k': "Ki", 'm': "Mi", 'g': "Gi"}[t[n-1]]; ok {
			t = t[:n-1] + bin
		} else if t[n-1] == 'b' {
			t = t[:n-1]
		}
	}
	q, err := resource.ParseQuantity(t)
	if err != nil || q.Value() <= 0 {
		return 0, fmt.Errorf("shm size %q: want a positive size such as 1Gi, 512m or a number of bytes", s)
	}
	return q.Value(), nil
}

// RuntimeConfig is what a caller knows about how to run the probes; the
// lock fills in the rest (the storage path, the /dev/shm size).
type RuntimeConfig struct {
	// Kind names the runtime: auto (the default), in-place, containerd,
	// podman, docker or kubernetes (a Job driven through the API server;
	// auto never picks it).
	Kind string
	// Image is the image by digest.
	Image name.Digest
	// From is, for podman/docker, what to run instead of Image (oci:DIR,
	// oci-archive:FILE). A run of something other than the digest cannot
	// prove the digest: its result is not signed unless the init's
	// fingerprint names the digest.
	From string
	// Python is the image's interpreter. The default is the runtime's.
	Python string
	// Storage is a host folder mounted at the lock's runtime.storage.path.
	Storage string
	// ShmSize overrides the /dev/shm size (ParseShmSize). The default is
	// ShmBytes(lock).
	ShmSize string
	// GPUMode is, for podman/docker, how GPUs are passed: cdi (the default,
	// --device nvidia.com/gpu=all) or docker (--gpus all).
	GPUMode string
	// GPUs is the number of GPUs a container gets. The default, 0, is all.
	GPUs int
	// ContainerdAddress, ContainerdNamespace and Snapshotter configure the
	// containerd runtime (see Containerd).
	ContainerdAddress   string
	ContainerdNamespace string
	Snapshotter         string
	// CDISpecDirs are where the containerd runtime reads CDI specs.
	CDISpecDirs []string
	// PodmanArgs go to `podman run` before the image.
	PodmanArgs []string
	// Kubeconfig, KubeContext and Namespace point the kubernetes runtime
	// at a cluster (see Kubernetes); Keep leaves its Job in place.
	Kubeconfig  string
	KubeContext string
	Namespace   string
	Keep        bool
	// Job shapes the kubernetes runtime's Job (storage claim, all-reduce
	// iterations); its Namespace, Python and ShmSize come from the fields
	// above when they are set.
	Job JobConfig
	// RegistryTLS is the TLS configuration the containerd runtime pulls
	// with (auth.Access.TLSConfig: the system store plus --ca-file). The
	// default is the system store.
	RegistryTLS *tls.Config
}

// Detector finds the runtime that "auto" means on this host. Its fields
// default to the real host; tests replace them.
type Detector struct {
	// LookPath finds a program. The default is exec.LookPath.
	LookPath func(string) (string, error)
	// Getenv reads the environment. The default is os.Getenv.
	Getenv func(string) string
	// Dial reports whether a unix socket answers. The default dials it.
	Dial func(ctx context.Context, path string) error
}

func (d Detector) lookPath(f string) (string, error) {
	if d.LookPath != nil {
		return d.LookPath(f)
	}
	return exec.LookPath(f)
}

func (d Detector) getenv(k string) string {
	if d.Getenv != nil {
		return d.Getenv(k)
	}
	return os.Getenv(k)
}

func (d Detector) dial(ctx context.Context, path string) error {
	if d.Dial != nil {
		return d.Dial(ctx, path)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	return c.Close()
}

// ErrNoRuntime is what Detect returns when it finds no runtime.
var ErrNoRuntime = errors.New("no verification runtime found")

// Detect returns the runtime "auto" means here and why, in this order:
// containerd when its socket answers (cfg.ContainerdAddress,
// $CONTAINERD_ADDRESS or DefaultContainerdAddress); podman, then docker,
// on PATH; in-place only when this process already runs inside the image
// (the platform's IMAGECTL_IMAGE_DIGEST, which the init records in its
// fingerprint, is cfg.Image's digest). Anything else is ErrNoRuntime,
// naming what was looked for: auto never falls back to in-place.
// withInPlace false leaves in-place out (release: it verifies images it
// just built, never its own).
func (d Detector) Detect(ctx context.Context, cfg RuntimeConfig, withInPlace bool) (kind, reason string, err error) {
	addr := firstNonEmpty(cfg.ContainerdAddress, d.getenv("CONTAINERD_ADDRESS"), DefaultContainerdAddress)
	derr := d.dial(ctx, addr)
	if derr == nil {
		return RuntimeContainerd, "containerd answers at " + addr, nil
	}
	looked := []string{fmt.Sprintf("containerd at %s (%v)", addr, derr)}
	for _, bin := range []string{RuntimePodman, RuntimeDocker} {
		p, err := d.lookPath(bin)
		if err == nil {
			return bin, bin + " is " + p, nil
		}
		looked = append(looked, bin+" on PATH")
	}
	if withInPlace {
		in := d.getenv("IMAGECTL_IMAGE_DIGEST")
		if in != "" && in == cfg.Image.DigestStr() {
			return RuntimeInPlace, "this process runs inside " + in + " (IMAGECTL_IMAGE_DIGEST)", nil
		}
		what := "IMAGECTL_IMAGE_DIGEST is not set"
		if in != "" {
			what = "IMAGECTL_IMAGE_DIGEST is " + in
		}
		looked = append(looked, "in-place inside "+firstNonEmpty(cfg.Image.DigestStr(), "the image")+" ("+what+")")
	}
	return "", "", fmt.Errorf("%w: looked for %s; name one with --runtime", ErrNoRuntime, strings.Join(looked, ", "))
}

// NewRuntime returns the runtime cfg.Kind names for the image of lock l
// (auto must have been resolved by Detect first). The lock gives the
// storage path and the /dev/shm size.
func NewRuntime(l *lock.Lock, cfg RuntimeConfig) (Runtime, error) {
	shm := ShmBytes(l)
	if cfg.ShmSize != "" {
		n, err := ParseShmSize(cfg.ShmSize)
		if err != nil {
			return nil, err
		}
		shm = n
	}
	storagePath := ""
	if l != nil {
		storagePath = l.Runtime.Storage.Path
	}
	switch cfg.Kind {
	case RuntimeInPlace:
		return &InPlace{Python: cfg.Python}, nil
	case RuntimeContainerd:
		if cfg.From != "" {
			return nil, fmt.Errorf("the containerd runtime pulls the image by digest; --from %q is for podman and docker", cfg.From)
		}
		return &Containerd{Address: cfg.ContainerdAddress, Namespace: cfg.ContainerdNamespace, Snapshotter: cfg.Snapshotter,
			Image: cfg.Image, Python: cfg.Python, GPUs: cfg.GPUs, CDISpecDirs: cfg.CDISpecDirs, ShmBytes: shm,
			Storage: cfg.Storage, StoragePath: storagePath, TLS: cfg.RegistryTLS}, nil
	case RuntimePodman, RuntimeDocker:
		p := &Podman{Binary: cfg.Kind, Image: firstNonEmpty(cfg.From, cfg.Image.String()), Python: cfg.Python,
			ShmSize: fmt.Sprint(shm), Storage: cfg.Storage, StoragePath: storagePath, ExtraArgs: cfg.PodmanArgs}
		switch cfg.GPUMode {
		case "", "cdi":
			if cfg.GPUs > 0 {
				for i := 0; i < cfg.GPUs; i++ {
					p.GPUFlags = append(p.GPUFlags, "--device", fmt.Sprintf("%s=%d", GPUDeviceKind, i))
				}
			}
		case "docker":
			p.GPUFlags = []string{"--gpus", "all"}
			if cfg.GPUs > 0 {
				p.GPUFlags = []string{"--gpus", fmt.Sprint(cfg.GPUs)}
			}
		default:
			return nil, fmt.Errorf("gpu mode %q: want cdi or docker", cfg.GPUMode)
		}
		return p, nil
	case RuntimeAuto, "":
		return nil, errors.New("runtime auto: detect it first (Detector.Detect)")
	case RuntimeKubernetes:
		if cfg.From != "" {
			return nil, fmt.Errorf("the kubernetes runtime runs the image by digest; --from %q is for podman and docker", cfg.From)
		}
		job := cfg.Job
		job.Python = firstNonEmpty(cfg.Python, job.Python)
		job.ShmSize = firstNonEmpty(cfg.ShmSize, job.ShmSize)
		return &Kubernetes{Kubeconfig: cfg.Kubeconfig, Context: cfg.KubeContext, Namespace: firstNonEmpty(cfg.Namespace, job.Namespace),
			Image: cfg.Image, Lock: l, Job: job, Keep: cfg.Keep}, nil
	}
	return nil, fmt.Errorf("runtime %q: want auto, in-place, containerd, podman, docker or kubernetes", cfg.Kind)
}

// Selected is the runtime Select chose and why.
type Selected struct {
	Runtime Runtime
	// Kind is the runtime's name.
	Kind string
	// Reason says what auto detected; "" when the caller named the kind.
	Reason string
}

// Select builds the runtime cfg.Kind names, resolving auto through Detect
// first. A kind that does not exist is a usage error (exit 2); auto that
// finds nothing is a *NotRunError (exit 7). The caller prints Kind and
// Reason: the choice is never silent.
func (d Detector) Select(ctx context.Context, l *lock.Lock, cfg RuntimeConfig, withInPlace bool) (Selected, error) {
	var sel Selected
	if cfg.Kind == "" || cfg.Kind == RuntimeAuto {
		kind, reason, err := d.Detect(ctx, cfg, withInPlace)
		if err != nil {
			return sel, &NotRunError{Stage: "runtime", Err: err}
		}
		cfg.Kind, sel.Reason = kind, reason
	}
	rt, err := NewRuntime(l, cfg)
	if err != nil {
		return sel, exitcode.Wrap(exitcode.Usage, err)
	}
	sel.Runtime, sel.Kind = rt, cfg.Kind
	return sel, nil
}
