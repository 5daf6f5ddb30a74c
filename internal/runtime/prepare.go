package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"imagectl/internal/logs"
	"imagectl/internal/version"
)

// Prepared is what the init found and changed before the command starts.
type Prepared struct {
	// Env is the command's environment: the init's own plus TMPDIR and the
	// cache variables.
	Env        []string
	Storage    StorageState
	Swappiness *SwappinessResult
	Shm        *ShmResult
	Caches     []CacheDir
	// Driver is read only when the image has a driver floor.
	Driver Driver
	// SSH says whether sshd is installed and which host keys were generated.
	SSH SSHHostKeys
	// User is who the command and Jupyter run as; nil runs them as the init
	// runs (no user configured, or the container started as non-root).
	User *Identity
	// Services are the services to start beside the command, in order.
	Services []Service
	// Refused are the services the init will not start for want of a
	// secret (*JupyterRefusedError); with no command they stop the container.
	Refused []error
	// Skipped names the root steps skipped because the container started
	// as a non-root user (said once, in one warning).
	Skipped []string

	cfg        Config
	opts       options
	started    time.Time
	gcRoots    []string
	gcAge      time.Duration
	gcBytes    int64
	shmMin     int64
	driverRead bool
	warnings   int
}

// Prepare runs the start-up steps in order: wait for storage, set
// swappiness, check (and enlarge) /dev/shm, create TMPDIR and the caches,
// generate missing sshd host keys (only when sshd is installed), check the
// driver floor. (WriteFingerprint then writes the fingerprint, and
// CollectGarbage trims the caches beside the command.) Problems the workload can
// live with are logged as one warning each (with what to do) through the
// logger in ctx; the returned error is set only when the container must not
// start: required storage never came (*StorageNotReadyError, exit 75), the
// driver is below the floor under the fail policy (*DriverTooOldError,
// exit 8), or ctx was cancelled.
func Prepare(ctx context.Context, cfg Config, env []string, opts ...Option) (*Prepared, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	log := logs.From(ctx)
	p := &Prepared{Env: append([]string(nil), env...), started: time.Now(), cfg: cfg, opts: o}
	warn := func(msg string) {
		p.warnings++
		log.Warn(msg)
	}

	root := o.euid == 0
	var skip []string
	if !root {
		if cfg.Swappiness != nil {
			skip = append(skip, "swappiness")
		}
		if cfg.User != nil {
			skip = append(skip, "the folders' ownership and the switch to user "+cfg.User.Name)
		}
		if cfg.SSH != nil {
			skip = append(skip, "sshd")
		}
		if len(skip) > 0 {
			p.Skipped = skip
			warn(fmt.Sprintf("running as uid %d, not root: skipping %s (they need root); the rest goes on", o.euid, strings.Join(skip, ", ")))
		}
	}
	if cfg.User != nil {
		id := resolveIdentity(*cfg.User, filepath.Join(o.sshRoot, "etc/group"))
		switch {
		case root:
			p.User = id
		case o.euid == id.UID:
			// Started as the user already: its environment still applies.
			p.Env = userEnv(p.Env, id)
		}
	}

	p.Storage, err = waitStorage(ctx, cfg.Storage, o)
	if err != nil {
		return p, err
	}
	if p.Storage.Configured && !p.Storage.Ready {
		warn(fmt.Sprintf("storage not ready after %v (waited for %s); using local paths under %s instead, so caches will not survive the container: mount the volume, or set %s=true to fail instead of starting without it",
			p.Storage.Waited.Round(time.Millisecond), describeStorage(cfg.Storage), o.fallback, EnvStorageRequired))
	}
	where := func(path string) string {
		if p.Storage.Configured && !p.Storage.Ready {
			return relocate(filepath.Clean(path), p.Storage.Root, o.fallback)
		}
		return path
	}

	if cfg.Swappiness != nil && root {
		r, err := applySwappiness(o.proc, *cfg.Swappiness)
		if err != nil {
			warn(err.Error() + "; the command starts anyway")
		}
		if r.Advice != "" {
			warn(r.Advice)
		}
		p.Swappiness = &r
	}

	p.shmMin = cfg.MinShmBytes
	if cfg.MinShmBytes > 0 {
		shmPath := cfg.ShmPath
		if shmPath == "" {
			shmPath = DefaultShmPath
		}
		shm, err := ensureShm(shmPath, cfg.MinShmBytes)
		switch {
		case err != nil:
			warn(fmt.Sprintf("%v; the image needs %s of shared memory there: mount a tmpfs at %s (--shm-size=%s)", err, humanSize(cfg.MinShmBytes), shmPath, lowerSize(humanSize(cfg.MinShmBytes))))
		case shm.Advice != "":
			warn(shm.Advice)
		}
		p.Shm = &shm
	}

	for _, d := range cacheDirs(cfg) {
		if envSet(p.Env, d.Env[0]) {
			d.Path, d.FromEnv = getenvFrom(p.Env, d.Env[0]), true
			p.Caches = append(p.Caches, d)
			continue
		}
		d.Path = where(d.Path)
		if err := makeDir(d.Path); err != nil {
			warn(fmt.Sprintf("cannot create the %s directory %s (%v); %s stays unset and the framework uses its default: make the path writable or point the image's runtime block elsewhere", d.Name, d.Path, err, strings.Join(d.Env, ", ")))
			continue
		}
		if p.User != nil {
			if err := giveTo(d.Path, p.User); err != nil {
				warn(err.Error() + "; the command may not be able to write there")
			}
		}
		for _, name := range d.Env {
			p.Env = setEnv(p.Env, name, d.Path)
		}
		p.Caches = append(p.Caches, d)
	}
	p.gcAge, p.gcBytes = cfg.Caches.GCMaxAge.Std(), cfg.Caches.GCMaxBytes
	if p.gcAge > 0 || p.gcBytes > 0 {
		tmp := getenvFrom(p.Env, "TMPDIR")
		if tmp == o.tmp {
			tmp = ""
		}
		p.gcRoots = gcRoots(p.Caches, o.tmp, tmp)
	}

	// sshd host keys are never in the image's layers: generate the missing
	// ones now, before the command (which may start sshd).
	if root {
		if p.SSH, err = ensureSSHHostKeys(ctx, o.sshRoot, p.Env); err != nil {
			warn(err.Error())
		}
	}

	if p.User != nil {
		if err := ensureHome(p.User); err != nil {
			warn(err.Error() + "; the command starts with HOME there anyway")
		}
		p.Env = userEnv(p.Env, p.User)
	}
	if cfg.SSH != nil && root {
		svc, w, err := sshService(cfg.SSH, p.User, o.sshRoot, o.runDir, p.Env)
		switch {
		case err != nil:
			warn(err.Error())
		default:
			if w != "" {
				warn(w)
			}
			p.Services = append(p.Services, svc)
		}
	}
	if cfg.Jupyter != nil {
		runDir := o.runDir
		if !root {
			// /run is root's: the user's own directory under /tmp instead.
			runDir = filepath.Join(o.tmp, fmt.Sprintf("imagectl-%d", o.euid))
		}
		svc, err := jupyterService(cfg.Jupyter, p.User, runDir, p.Env)
		var refused *JupyterRefusedError
		switch {
		case errors.As(err, &refused):
			p.Refused = append(p.Refused, err)
		case err != nil:
			warn(err.Error())
		default:
			p.Services = append(p.Services, svc)
		}
	}

	if cfg.DriverFloor != "" {
		p.Driver, err = ReadDriver(o.proc, o.dev)
		p.driverRead = err == nil
		if err != nil {
			warn(err.Error() + "; the driver check is skipped")
		} else if err := checkDriver(cfg, p.Driver); err != nil {
			var old *DriverTooOldError
			if errors.As(err, &old) && cfg.DriverPolicy == "fail" {
				return p, err
			}
			warn(err.Error())
		}
	}

	return p, nil
}

// errNoDriver says an image with a driver floor runs without a driver.
var errNoDriver = errors.New("no NVIDIA driver in this container (/proc/driver/nvidia/version is missing), so CUDA will not see a GPU: start it with --gpus all (docker), --device nvidia.com/gpu=all (podman), or request nvidia.com/gpu resources on Kubernetes; ignore this on a CPU-only machine")

// checkDriver compares the driver with the floor.
func checkDriver(cfg Config, d Driver) error {
	if cfg.DriverFloor == "" {
		return nil
	}
	if d.Version == "" {
		return errNoDriver
	}
	c, err := version.Compare(d.Version, strings.TrimSpace(cfg.DriverFloor))
	if err != nil {
		return err
	}
	if c < 0 {
		return &DriverTooOldError{Found: d.Version, Floor: cfg.DriverFloor, CUDA: cfg.Image.CUDA}
	}
	return nil
}

// WriteFingerprint collects the environment fingerprint and writes it where
// the config says (relocated like the caches when optional storage never
// came) and returns it with the path written. When the config names no path
// it does nothing (a zero fingerprint, ""). The init runs it just before
// starting the command, so the command (and the verify probes) can read it.
// svcs are the services as StartServices left them (Services.States).
func (p *Prepared) WriteFingerprint(ctx context.Context, svcs ...ServiceState) (Fingerprint, string, error) {
	if p.cfg.FingerprintPath == "" {
		return Fingerprint{}, "", nil
	}
	drv := p.Driver
	if !p.driverRead {
		drv, _ = ReadDriver(p.opts.proc, p.opts.dev)
	}
	// vm.swappiness as the swappiness step left it (read once), else read now.
	swap := -1
	if p.Swappiness != nil {
		swap = p.Swappiness.After
	}
	if swap < 0 {
		swap = ReadSwappiness(p.opts.proc)
	}
	fp := collectFingerprint(p.cfg, p.Env, p.Storage, p.shmForFingerprint(), drv, swap, p.Caches)
	if u := p.cfg.User; u != nil {
		fp.User = &FPUser{Name: u.Name, UID: u.UID, GID: u.GID, Home: u.HomeDir(), Switched: p.User != nil}
	}
	fp.Services = append(fp.Services, svcs...)
	for _, err := range p.Refused {
		fp.Services = append(fp.Services, ServiceState{Name: "jupyter", State: "refused", Detail: err.Error()})
	}
	path := p.cfg.FingerprintPath
	if p.Storage.Configured && !p.Storage.Ready {
		path = relocate(filepath.Clean(path), p.Storage.Root, p.opts.fallback)
	}
	if err := writeFingerprint(path, fp); err != nil {
		return fp, "", fmt.Errorf("%w; the platform will not find this container's fingerprint: make the directory writable or set %s", err, EnvFingerprint)
	}
	return fp, path, nil
}

func (p *Prepared) shmForFingerprint() ShmResult {
	if p.Shm != nil && p.Shm.Path != "" {
		return *p.Shm
	}
	path := p.cfg.ShmPath
	if path == "" {
		path = DefaultShmPath
	}
	r, _ := MeasureShm(path)
	return r
}

// CollectGarbage trims the compile caches by the configured age and size.
// The init runs it beside the command, so it never delays the start; files
// written after Prepare began are never touched.
func (p *Prepared) CollectGarbage(ctx context.Context) (GCResult, error) {
	return CollectCaches(ctx, p.gcRoots, p.gcAge, p.gcBytes, p.started)
}

// Warnings is the number of warnings Prepare logged.
func (p *Prepared) Warnings() int { return p.warnings }

// Summary is the one line the init prints on a good start.
func (p *Prepared) Summary() string {
	var parts []string
	if p.Storage.Configured {
		s := "storage " + p.Storage.Root
		switch {
		case !p.Storage.Ready:
			s += " not ready (local fallback)"
		case p.Storage.Mount != nil:
			s += " ready (" + p.Storage.Mount.FSType + ")"
		default:
			s += " ready"
		}
		if p.Storage.Waited >= time.Second {
			s += fmt.Sprintf(" after %v", p.Storage.Waited.Round(100*time.Millisecond))
		}
		parts = append(parts, s)
	}
	if p.Shm != nil && p.Shm.Bytes > 0 && p.shmMin > 0 {
		s := "shm " + humanSize(p.Shm.Bytes)
		if p.Shm.Resized {
			s += " (enlarged)"
		}
		parts = append(parts, s)
	}
	if p.Swappiness != nil {
		if p.Swappiness.Changed {
			parts = append(parts, fmt.Sprintf("swappiness %d->%d (host-wide)", p.Swappiness.Before, p.Swappiness.After))
		} else {
			parts = append(parts, fmt.Sprintf("swappiness %d", p.Swappiness.After))
		}
	}
	if p.Driver.Version != "" {
		parts = append(parts, fmt.Sprintf("driver %s, %d GPU(s)", p.Driver.Version, len(p.Driver.GPUs)))
	}
	if len(p.Caches) > 0 {
		parts = append(parts, fmt.Sprintf("%d cache dir(s)", len(p.Caches)))
	}
	if p.User != nil {
		parts = append(parts, fmt.Sprintf("user %s (%d:%d)", p.User.Name, p.User.UID, p.User.GID))
	}
	for _, s := range p.Services {
		parts = append(parts, fmt.Sprintf("%s on port %d", s.Name, s.Port))
	}
	if n := len(p.SSH.Generated); n > 0 {
		parts = append(parts, fmt.Sprintf("%d sshd host key(s) generated", n))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " · ")
}
