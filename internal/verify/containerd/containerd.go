// Package containerd runs verification probes in containers through
// containerd's Go client.
package containerd

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
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
	"golang.org/x/sync/semaphore"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"imagectl/internal/logs"
	"imagectl/internal/owner"
	"imagectl/internal/verify"
)

// DefaultAddress is containerd's own default socket.
const DefaultAddress = "/run/containerd/containerd.sock"

// Runtime runs every probe in a fresh container of the image through
// containerd's Go client: the image is pulled by digest into containerd
// (and unpacked), each probe runs through the image's own entrypoint (the
// init) with the probes mounted read-only, the GPUs injected by CDI from
// the host's CDI specs, a network namespace of its own holding only a
// loopback interface (network off; the all-reduce's ranks still meet on
// 127.0.0.1), /dev/shm sized from the lock and the storage folder mounted
// at the lock's storage path. The container is told the digest it runs
// (IMAGECTL_IMAGE_DIGEST), which the init writes into its fingerprint.
type Runtime struct {
	o   options
	ref name.Digest

	probes verify.ProbeDir

	mu          sync.Mutex
	client      *containerd.Client
	image       containerd.Image
	pulled      string // digest containerd holds for ref, after a pull
	pullErr     error
	netns       *netNS
	cdi         *cdi.Cache
	seq         int
	pullSeconds float64 // how long the pull and unpack took
}

// New returns the runtime that pulls ref, by digest, from its registry into
// containerd and runs each probe in a fresh container of it.
func New(ref name.Digest, opts ...Option) (*Runtime, error) {
	if ref.DigestStr() == "" {
		return nil, errors.New("containerd runtime: no image digest")
	}
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return &Runtime{o: *o, ref: ref}, nil
}

// Name implements verify.Runtime.
func (*Runtime) Name() string { return "containerd" }

// Pulls implements verify.RegistryPuller: containerd pulls the image from
// its registry.
func (r *Runtime) Pulls() string { return r.ref.String() }

// PulledIn implements verify.PullTimer.
func (r *Runtime) PulledIn() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pullSeconds
}

// RanDigest implements verify.DigestRunner: the digest containerd pulled and ran,
// once the first probe ran; "" before.
func (r *Runtime) RanDigest() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pulled
}

func (r *Runtime) address() string {
	return cmp.Or(r.o.address, os.Getenv("CONTAINERD_ADDRESS"), DefaultAddress)
}

// quiet is a logger for containerd's client packages, which log through
// the context (containerd/log) and otherwise write to stderr: libraries
// print nothing.
var quiet = func() *clog.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}()

func (r *Runtime) ns(ctx context.Context) context.Context {
	return clog.WithLogger(namespaces.WithNamespace(ctx, cmp.Or(r.o.namespace, os.Getenv("CONTAINERD_NAMESPACE"), "imagectl")), quiet)
}

// prepare connects, pulls the image by digest and checks what containerd
// holds is that digest, once; later calls return the first outcome.
func (r *Runtime) prepare(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil || r.pullErr != nil {
		return r.pullErr
	}
	r.pullErr = r.prepareLocked(ctx)
	return r.pullErr
}

func (r *Runtime) prepareLocked(ctx context.Context) error {
	if r.ref.DigestStr() == "" {
		return errors.New("containerd runtime: no image digest")
	}
	c, err := containerd.New(r.address(), containerd.WithTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("connecting to containerd at %s: %w", r.address(), err)
	}
	ctx = r.ns(ctx)
	sweepContainers(ctx, c)
	sweepLeases(ctx, c)
	snap := cmp.Or(r.o.snapshotter, "overlayfs")
	t := time.Now()
	pull := []containerd.RemoteOpt{
		containerd.WithPullUnpack,
		containerd.WithPullSnapshotter(snap),
		containerd.WithResolver(r.resolver(ctx)),
	}
	if r.o.unpacks > 1 {
		// containerd fetches every layer at once already; with a limiter
		// it also unpacks them at once where the snapshotter can rebase
		// (and one at a time, logging why, where it cannot).
		pull = append(pull, containerd.WithUnpackOpts([]containerd.UnpackOpt{
			containerd.WithUnpackLimiter(semaphore.NewWeighted(int64(r.o.unpacks))),
		}))
	}
	if snap != "overlayfs" && snap != "native" {
		// A remote snapshotter (stargz-snapshotter) is told each layer's
		// image and digest in the snapshot labels CRI sets, so that it can
		// mount an eStargz layer lazily instead of containerd fetching it.
		pull = append(pull, containerd.WithImageHandlerWrapper(snapshotters.AppendInfoHandlerWrapper(r.ref.String())))
	}
	// The pull's lease (what keeps its content and its unpacking's
	// snapshots until the image holds them) names this process: a pull
	// that is killed leaves it, and the next run's sweepLeases lets
	// containerd collect what it held.
	lctx, endLease, err := c.WithLease(ctx, leases.WithRandomID(), leases.WithExpiration(24*time.Hour), leases.WithLabels(ownerLabels()))
	if err != nil {
		c.Close()
		return fmt.Errorf("creating containerd's lease for the pull: %w", err)
	}
	img, err := c.Pull(lctx, r.ref.String(), pull...)
	ectx, cancel := cleanupContext(ctx)
	if lerr := endLease(ectx); lerr != nil {
		logs.From(ctx).Warn("ending the pull's lease", "err", lerr)
	}
	cancel()
	if err != nil {
		c.Close()
		return fmt.Errorf("pulling %s into containerd: %w", r.ref, err)
	}
	r.pullSeconds = time.Since(t).Seconds()
	got := img.Target().Digest.String()
	if got != r.ref.DigestStr() {
		c.Close()
		return fmt.Errorf("containerd pulled %s for %s", got, r.ref)
	}
	logs.From(ctx).Info("image pulled and unpacked into containerd", "image", r.ref.String(),
		"seconds", fmt.Sprintf("%.2f", r.pullSeconds), "snapshotter", snap, "unpack_concurrency", r.o.unpacks)
	cache, err := cdi.NewCache(cdiOptions(r.o.cdiSpecDirs)...)
	if err != nil {
		// Like containerd: a broken spec of one vendor does not stop
		// another's devices; injection fails if it must.
		logs.From(ctx).Warn("CDI spec refresh", "err", err)
	}
	if swept, err := sweepNetNS(); len(swept) > 0 || err != nil {
		logs.From(ctx).Info("removed the probes' network namespaces of ended runs", "folders", strings.Join(swept, ","), "err", err)
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
func (r *Runtime) resolver(ctx context.Context) remotes.Resolver {
	kc := authn.DefaultKeychain
	opts := config.HostOptions{
		Credentials: func(host string) (string, string, error) { return keychainCreds(ctx, kc, host) },
	}
	if r.o.tls != nil {
		opts.DefaultTLS = r.o.tls.Clone()
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

// SpecOpts returns the OCI spec options of one probe's container: the
// image's entrypoint with the probe as its command, the environment, the
// mounts, /dev/shm, the network namespace and, for a GPU probe, devices.
func (r *Runtime) SpecOpts(img oci.Image, probeDir, netnsPath string, p verify.Probe, devices []string) []oci.SpecOpts {
	py := cmp.Or(r.o.python, p.Python, "python3")
	args := append([]string{py, verify.ProbeMount + "/" + p.Script}, p.Args...)
	mounts := []specs.Mount{{Destination: verify.ProbeMount, Type: "bind", Source: probeDir, Options: []string{"rbind", "ro"}}}
	if r.o.storage != "" && r.o.storagePath != "" {
		mounts = append(mounts, specs.Mount{Destination: r.o.storagePath, Type: "bind", Source: r.o.storage, Options: []string{"rbind", "rw"}})
	}
	shm := r.o.shmBytes
	if shm <= 0 {
		shm = 1 << 30
	}
	opts := []oci.SpecOpts{
		oci.WithImageConfigArgs(img, args),
		oci.WithEnv(verify.ProbeEnv(os.Getenv, r.ref.DigestStr(), nil)),
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

// Exec implements verify.Execer.
func (r *Runtime) Exec(ctx context.Context, p verify.Probe) ([]byte, error) {
	if err := r.prepare(ctx); err != nil {
		return nil, &verify.ProbeError{Probe: p.Name, Err: err}
	}
	dir, err := r.probes.Path()
	if err != nil {
		return nil, fmt.Errorf("writing probe scripts: %w", err)
	}
	var devices []string
	if p.GPU {
		if devices, err = GPUDevices(r.cdi, r.o.gpus); err != nil {
			return nil, &verify.ProbeError{Probe: p.Name, Err: err}
		}
	}
	r.mu.Lock()
	c, img, netns := r.client, r.image, r.netns
	r.seq++
	id := fmt.Sprintf("imagectl-verify-%s-%s-%d", p.Name, verify.RandomHex(4), r.seq)
	r.mu.Unlock()
	if c == nil {
		return nil, &verify.ProbeError{Probe: p.Name, Err: errors.New("containerd runtime: closed")}
	}
	ctx = r.ns(ctx)
	log := logs.From(ctx)

	t0 := time.Now()
	cont, err := c.NewContainer(ctx, id,
		containerd.WithImage(img),
		// The snapshotter that unpacked the image (or mounted it lazily):
		// the container's snapshot is made on its layers.
		containerd.WithSnapshotter(cmp.Or(r.o.snapshotter, "overlayfs")),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(r.SpecOpts(img, dir, netns.path, p, devices)...),
		containerd.WithContainerLabels(ownerLabels()))
	if err != nil {
		return nil, &verify.ProbeError{Probe: p.Name, Err: fmt.Errorf("creating container: %w", err)}
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
		return nil, &verify.ProbeError{Probe: p.Name, Err: fmt.Errorf("creating task: %w", err), Stderr: string(bytes.TrimSpace(stderr.b))}
	}
	// The task is waited for on a context of its own: on ctx, a cancel
	// would end the wait before the task ends, and the task (and so the
	// container) could not be deleted yet.
	wctx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWait()
	exitC, err := task.Wait(wctx)
	if err != nil {
		deleteTask(ctx, task, id)
		return nil, &verify.ProbeError{Probe: p.Name, Err: err}
	}
	if err := task.Start(ctx); err != nil {
		deleteTask(ctx, task, id)
		return nil, &verify.ProbeError{Probe: p.Name, Err: fmt.Errorf("starting task: %w", err), Stderr: string(bytes.TrimSpace(stderr.b))}
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
		return stdout.Bytes(), &verify.ProbeError{Probe: p.Name, Err: ctx.Err(), Stderr: string(bytes.TrimSpace(stderr.b))}
	}
	code, _, err := st.Result()
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return stdout.Bytes(), &verify.ProbeError{Probe: p.Name, Err: err, Stderr: string(bytes.TrimSpace(stderr.b))}
	}
	return stdout.Bytes(), nil
}

// OwnerLabel is the label of every probe container and pull lease that
// names the process that made it (owner.Self). A probe's container is deleted when the probe
// ends, or is cancelled; one that a killed run left (SIGKILL, a lost node)
// is deleted, task, snapshot and all, by the next run's pull in the same
// namespace (sweepContainers), which leaves those of live runs alone.
const OwnerLabel = "dev.imagectl.verify.owner"

// ownerLabels labels a probe container or a pull's lease with this
// process (none where /proc cannot tell it: then nothing is swept).
func ownerLabels() map[string]string {
	if s := owner.Self(); s != "" {
		return map[string]string{OwnerLabel: s}
	}
	return nil
}

// sweepLeases deletes the leases of pulls in ctx's namespace whose owner
// is gone, synchronously: containerd then collects the content and the
// half-unpacked snapshots a killed pull held. It logs what it removed and
// what it could not.
func sweepLeases(ctx context.Context, c *containerd.Client) {
	log := logs.From(ctx)
	ls := c.LeasesService()
	lctx, cancel := cleanupContext(ctx)
	all, err := ls.List(lctx, fmt.Sprintf("labels.%q", OwnerLabel))
	cancel()
	if err != nil {
		log.Warn("listing the pull leases of ended runs", "err", err)
		return
	}
	for _, l := range all {
		if !owner.Gone(l.Labels[OwnerLabel]) {
			continue
		}
		dctx, cancel := cleanupContext(ctx)
		err := ls.Delete(dctx, l, leases.SynchronousDelete)
		cancel()
		if err != nil {
			log.Warn("removing the pull lease of an ended run", "lease", l.ID, "owner", l.Labels[OwnerLabel], "err", err)
			continue
		}
		log.Info("removed the pull lease of an ended run", "lease", l.ID, "owner", l.Labels[OwnerLabel])
	}
}

// sweepContainers deletes the probe containers in ctx's namespace whose
// owner is gone: their tasks killed and deleted, then each container with
// its snapshot, each step within cleanupTimeout. It logs what it removed
// and what it could not; verification goes on either way.
func sweepContainers(ctx context.Context, c *containerd.Client) {
	log := logs.From(ctx)
	lctx, cancel := cleanupContext(ctx)
	cs, err := c.Containers(lctx, fmt.Sprintf("labels.%q", OwnerLabel))
	cancel()
	if err != nil {
		log.Warn("listing probe containers of ended runs", "err", err)
		return
	}
	for _, cont := range cs {
		// The labels the list brought: no second round trip per container.
		info, err := cont.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil || !owner.Gone(info.Labels[OwnerLabel]) {
			continue
		}
		labels := info.Labels
		id := cont.ID()
		tctx, cancel := cleanupContext(ctx)
		if task, err := cont.Task(tctx, nil); err == nil {
			deleteTask(ctx, task, id)
		}
		cancel()
		dctx, cancel := cleanupContext(ctx)
		err = cont.Delete(dctx, containerd.WithSnapshotCleanup)
		cancel()
		if err != nil {
			log.Warn("removing a probe container of an ended run", "id", id, "owner", labels[OwnerLabel], "err", err)
			continue
		}
		log.Info("removed a probe container of an ended run", "id", id, "owner", labels[OwnerLabel])
	}
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

// Close implements verify.Runtime: it closes the client and removes the probe
// scripts and the network namespace. The image stays in containerd (the
// next verification of the digest pulls nothing).
func (r *Runtime) Close() error {
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
	errs = append(errs, r.probes.Close())
	return errors.Join(errs...)
}

// tailWriter keeps the last n bytes written to it (a probe's stderr).
type tailWriter struct {
	n int
	b []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.n {
		t.b = t.b[len(t.b)-t.n:]
	}
	return len(p), nil
}
