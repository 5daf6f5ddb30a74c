package verify

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/containerd/v2/pkg/snapshotters"
	clog "github.com/containerd/log"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"imagectl/internal/logs"
)

// DefaultContainerdAddress is containerd's own default socket.
const DefaultContainerdAddress = "/run/containerd/containerd.sock"

// PassEnv are passed from imagectl's environment into every probe
// container; where imagectl's environment does not set one, the value
// here is. They keep NVLink multicast off in NCCL, PyTorch and NVSHMEM:
// on hosts whose GPUs others share, a program that uses it can take them
// out of service.
var PassEnv = map[string]string{
	"NCCL_NVLS_ENABLE":                 "0",
	"TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
	"NVSHMEM_DISABLE_NVLS":             "1",
}

// Containerd runs every probe in a fresh container of the image through
// containerd's Go client: the image is pulled by digest into containerd
// (and unpacked), each probe runs through the image's own entrypoint (the
// init) with the probes mounted read-only, the GPUs injected by CDI from
// the host's CDI specs, a network namespace of its own holding only a
// loopback interface (network off; the all-reduce's ranks still meet on
// 127.0.0.1), /dev/shm sized from the lock and the storage folder mounted
// at the lock's storage path. The container is told the digest it runs
// (IMAGECTL_IMAGE_DIGEST), which the init writes into its fingerprint.
type Containerd struct {
	// Address is containerd's socket. The default is $CONTAINERD_ADDRESS,
	// else DefaultContainerdAddress.
	Address string
	// Namespace is the containerd namespace images and containers live in.
	// The default is $CONTAINERD_NAMESPACE (as for ctr), else "imagectl".
	Namespace string
	// Snapshotter unpacks the image. The default is "overlayfs". Another
	// (e.g. "stargz", stargz-snapshotter's proxy plugin) gets the layers'
	// image and digest in the snapshot labels, as CRI passes them, so that
	// a remote snapshotter can mount eStargz layers lazily.
	Snapshotter string
	// Image is the image, by digest, that containerd pulls from its registry.
	Image name.Digest
	// Python is the interpreter inside the image. The default is the
	// probe's (the lock's: ImagePython), else python3.
	Python string
	// GPUs is how many nvidia.com/gpu CDI devices a GPU probe gets: 0 (the
	// default) is nvidia.com/gpu=all; N takes the first N indexed devices
	// and fails when the host's CDI specs have fewer.
	GPUs int
	// CDISpecDirs are where the CDI specs are read from. The default is the
	// CDI library's (/etc/cdi, /var/run/cdi).
	CDISpecDirs []string
	// ShmBytes sizes /dev/shm. The default is ShmBytes(lock) as the caller
	// computes it; 0 here means 1 GiB.
	ShmBytes int64
	// Storage is a host folder mounted read-write at StoragePath (the
	// lock's runtime.storage.path); empty mounts nothing.
	Storage     string
	StoragePath string
	// Env are extra KEY=VALUE variables for every probe container.
	Env []string
	// HostsDir is a containerd registry hosts directory (certs.d layout).
	// The default is none: containerd's defaults, with plain HTTP allowed
	// for loopback registries.
	HostsDir string
	// Keychain answers the registry's credential challenges. The default
	// is authn.DefaultKeychain (the Docker config).
	Keychain authn.Keychain
	// TLS is the registries' TLS configuration (containerd's DefaultTLS,
	// e.g. auth.Access.TLSConfig for a private CA). The default is the
	// system trust store.
	TLS *tls.Config

	probes probeDir

	mu      sync.Mutex
	client  *containerd.Client
	image   containerd.Image
	pulled  string // digest containerd holds for Image, after a pull
	pullErr error
	netns   *netNS
	cdi     *cdi.Cache
	seq     int
	// PullSeconds is how long the pull and unpack took (0 before the first
	// probe).
	PullSeconds float64
}

// Name implements Runtime.
func (*Containerd) Name() string { return "containerd" }

// RanDigest implements DigestRunner: the digest containerd pulled and ran,
// once the first probe ran; "" before.
func (r *Containerd) RanDigest() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pulled
}

func (r *Containerd) address() string {
	return firstNonEmpty(r.Address, os.Getenv("CONTAINERD_ADDRESS"), DefaultContainerdAddress)
}

// quiet is a logger for containerd's client packages, which log through
// the context (containerd/log) and otherwise write to stderr: libraries
// print nothing.
var quiet = func() *clog.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}()

func (r *Containerd) ns(ctx context.Context) context.Context {
	return clog.WithLogger(namespaces.WithNamespace(ctx, firstNonEmpty(r.Namespace, os.Getenv("CONTAINERD_NAMESPACE"), "imagectl")), quiet)
}

// prepare connects, pulls the image by digest and checks what containerd
// holds is that digest, once; later calls return the first outcome.
func (r *Containerd) prepare(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil || r.pullErr != nil {
		return r.pullErr
	}
	r.pullErr = r.prepareLocked(ctx)
	return r.pullErr
}

func (r *Containerd) prepareLocked(ctx context.Context) error {
	if r.Image.DigestStr() == "" {
		return errors.New("containerd runtime: no image digest")
	}
	c, err := containerd.New(r.address(), containerd.WithTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("connecting to containerd at %s: %w", r.address(), err)
	}
	ctx = r.ns(ctx)
	snap := firstNonEmpty(r.Snapshotter, "overlayfs")
	t := time.Now()
	pull := []containerd.RemoteOpt{
		containerd.WithPullUnpack,
		containerd.WithPullSnapshotter(snap),
		containerd.WithResolver(r.resolver(ctx)),
	}
	if snap != "overlayfs" && snap != "native" {
		// A remote snapshotter (stargz-snapshotter) is told each layer's
		// image and digest in the snapshot labels CRI sets, so that it can
		// mount an eStargz layer lazily instead of containerd fetching it.
		pull = append(pull, containerd.WithImageHandlerWrapper(snapshotters.AppendInfoHandlerWrapper(r.Image.String())))
	}
	img, err := c.Pull(ctx, r.Image.String(), pull...)
	if err != nil {
		c.Close()
		return fmt.Errorf("pulling %s into containerd: %w", r.Image, err)
	}
	r.PullSeconds = time.Since(t).Seconds()
	got := img.Target().Digest.String()
	if got != r.Image.DigestStr() {
		c.Close()
		return fmt.Errorf("containerd pulled %s for %s", got, r.Image)
	}
	logs.From(ctx).Info("image pulled and unpacked into containerd", "image", r.Image.String(),
		"seconds", fmt.Sprintf("%.2f", r.PullSeconds), "snapshotter", snap)
	cache, err := cdi.NewCache(cdiOptions(r.CDISpecDirs)...)
	if err != nil {
		// Like containerd: a broken spec of one vendor does not stop
		// another's devices; injection fails if it must.
		logs.From(ctx).Warn("CDI spec refresh", "err", err)
	}
	netns, err := newLoopbackNetNS()
	if err != nil {
		c.Close()
		return fmt.Errorf("creating the probes' network namespace: %w", err)
	}
	r.client, r.image, r.pulled, r.cdi, r.netns = c, img, got, cache, netns
	return nil
}

// resolver is containerd's own registry resolver: hosts configured as
// containerd configures them (loopback registries may speak plain HTTP),
// credentials from the keychain.
func (r *Containerd) resolver(ctx context.Context) remotes.Resolver {
	kc := r.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	opts := config.HostOptions{
		Credentials: func(host string) (string, string, error) { return keychainCreds(ctx, kc, host) },
	}
	if r.HostsDir != "" {
		opts.HostDir = config.HostDirFromRoot(r.HostsDir)
	}
	if r.TLS != nil {
		opts.DefaultTLS = r.TLS.Clone()
	}
	return docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, opts)})
}

// keychainCreds maps a keychain's answer to containerd's (user, secret):
// an identity token goes with an empty user.
func keychainCreds(ctx context.Context, kc authn.Keychain, host string) (string, string, error) {
	reg, err := name.NewRegistry(host)
	if err != nil {
		return "", "", err
	}
	a, err := authn.Resolve(ctx, kc, reg)
	if err != nil {
		return "", "", fmt.Errorf("credentials for %s: %w", host, err)
	}
	cfg, err := authn.Authorization(ctx, a)
	if err != nil {
		return "", "", fmt.Errorf("credentials for %s: %w", host, err)
	}
	if cfg.IdentityToken != "" {
		return "", cfg.IdentityToken, nil
	}
	return cfg.Username, cfg.Password, nil
}

// probeEnv is the environment every probe container gets on top of the
// image's: the multicast switches (PassEnv), the image digest for the
// init's fingerprint, and Env.
func probeEnv(getenv func(string) string, digest string, extra []string) []string {
	keys := make([]string, 0, len(PassEnv))
	for k := range PassEnv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env []string
	for _, k := range keys {
		v := PassEnv[k]
		if hv := getenv(k); hv != "" {
			v = hv
		}
		env = append(env, k+"="+v)
	}
	if digest != "" {
		env = append(env, "IMAGECTL_IMAGE_DIGEST="+digest)
	}
	return append(env, extra...)
}

// SpecOpts returns the OCI spec options of one probe's container: the
// image's entrypoint with the probe as its command, the environment, the
// mounts, /dev/shm, the network namespace and, for a GPU probe, devices.
func (r *Containerd) SpecOpts(img oci.Image, probeDir, netnsPath string, p Probe, devices []string) []oci.SpecOpts {
	py := firstNonEmpty(r.Python, p.Python, "python3")
	args := append([]string{py, probeMount + "/" + p.Script}, p.Args...)
	mounts := []specs.Mount{{Destination: probeMount, Type: "bind", Source: probeDir, Options: []string{"rbind", "ro"}}}
	if r.Storage != "" && r.StoragePath != "" {
		mounts = append(mounts, specs.Mount{Destination: r.StoragePath, Type: "bind", Source: r.Storage, Options: []string{"rbind", "rw"}})
	}
	shm := r.ShmBytes
	if shm <= 0 {
		shm = 1 << 30
	}
	opts := []oci.SpecOpts{
		oci.WithImageConfigArgs(img, args),
		oci.WithEnv(probeEnv(os.Getenv, r.Image.DigestStr(), r.Env)),
		oci.WithMounts(mounts),
		oci.WithDevShmSize((shm + 1023) / 1024),
	}
	if netnsPath != "" {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netnsPath}))
	}
	if p.GPU {
		opts = append(opts, withCDIDevices(r.cdi, devices))
	}
	return opts
}

// Exec implements Runtime.
func (r *Containerd) Exec(ctx context.Context, p Probe) ([]byte, error) {
	if err := r.prepare(ctx); err != nil {
		return nil, &ProbeError{Probe: p.Name, Err: err}
	}
	dir, err := r.probes.path()
	if err != nil {
		return nil, fmt.Errorf("writing probe scripts: %w", err)
	}
	var devices []string
	if p.GPU {
		if devices, err = GPUDevices(r.cdi, r.GPUs); err != nil {
			return nil, &ProbeError{Probe: p.Name, Err: err}
		}
	}
	r.mu.Lock()
	c, img, netns := r.client, r.image, r.netns
	r.seq++
	id := fmt.Sprintf("imagectl-verify-%s-%s-%d", p.Name, randomHex(4), r.seq)
	r.mu.Unlock()
	if c == nil {
		return nil, &ProbeError{Probe: p.Name, Err: errors.New("containerd runtime: closed")}
	}
	ctx = r.ns(ctx)
	log := logs.From(ctx)

	t0 := time.Now()
	cont, err := c.NewContainer(ctx, id,
		containerd.WithImage(img),
		// The snapshotter that unpacked the image (or mounted it lazily):
		// the container's snapshot is made on its layers.
		containerd.WithSnapshotter(firstNonEmpty(r.Snapshotter, "overlayfs")),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(r.SpecOpts(img, dir, netns.path, p, devices)...))
	if err != nil {
		return nil, &ProbeError{Probe: p.Name, Err: fmt.Errorf("creating container: %w", err)}
	}
	defer func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if err := cont.Delete(cctx, containerd.WithSnapshotCleanup); err != nil {
			log.Warn("removing probe container", "id", id, "err", err)
		}
	}()
	var stdout bytes.Buffer
	stderr := &tailWriter{n: 4096}
	task, err := cont.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, &stdout, stderr)))
	if err != nil {
		return nil, &ProbeError{Probe: p.Name, Err: fmt.Errorf("creating task: %w", err), Stderr: string(bytes.TrimSpace(stderr.b))}
	}
	// The task is waited for on a context of its own: on ctx, a cancel
	// would end the wait before the task ends, and the task (and so the
	// container) could not be deleted yet.
	wctx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWait()
	exitC, err := task.Wait(wctx)
	if err != nil {
		deleteTask(ctx, task, id)
		return nil, &ProbeError{Probe: p.Name, Err: err}
	}
	if err := task.Start(ctx); err != nil {
		deleteTask(ctx, task, id)
		return nil, &ProbeError{Probe: p.Name, Err: fmt.Errorf("starting task: %w", err), Stderr: string(bytes.TrimSpace(stderr.b))}
	}
	started := time.Since(t0)
	var st containerd.ExitStatus
	select {
	case st = <-exitC:
	case <-ctx.Done():
	}
	t1 := time.Now()
	deleteTask(ctx, task, id)
	log.Info("probe container", "probe", p.Name, "id", id, "start_s", fmt.Sprintf("%.3f", started.Seconds()),
		"teardown_s", fmt.Sprintf("%.3f", time.Since(t1).Seconds()), "devices", strings.Join(devices, ","))
	if ctx.Err() != nil {
		return stdout.Bytes(), &ProbeError{Probe: p.Name, Err: ctx.Err(), Stderr: string(bytes.TrimSpace(stderr.b))}
	}
	code, _, err := st.Result()
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return stdout.Bytes(), &ProbeError{Probe: p.Name, Err: err, Stderr: string(bytes.TrimSpace(stderr.b))}
	}
	return stdout.Bytes(), nil
}

// cleanupTimeout bounds each clean-up step of a probe (kill and delete its
// task, delete its container and snapshot): they run after a cancel too,
// on a context of their own, and a containerd that does not answer in
// time leaves them logged instead of hanging the command.
const cleanupTimeout = 5 * time.Second

// cleanupContext is ctx's values (namespace, logger) without its cancel,
// limited to cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// deleteTask kills the task's processes if any still run (SIGKILL, all of
// them), waits for them to exit and deletes the task, within
// cleanupTimeout; a task that has exited is just deleted.
func deleteTask(ctx context.Context, task containerd.Task, id string) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if _, err := task.Delete(cctx, containerd.WithProcessKill); err != nil {
		logs.From(ctx).Warn("removing probe task", "id", id, "err", err)
	}
}

// Close implements Runtime: it closes the client and removes the probe
// scripts and the network namespace. The image stays in containerd (the
// next verification of the digest pulls nothing).
func (r *Containerd) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if r.client != nil {
		errs = append(errs, r.client.Close())
		r.client = nil
	}
	if r.netns != nil {
		errs = append(errs, r.netns.remove())
		r.netns = nil
	}
	errs = append(errs, r.probes.close())
	return errors.Join(errs...)
}
