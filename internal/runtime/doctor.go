package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"imagectl/internal/version"
)

// Check statuses.
const (
	StatusOK   = "ok"
	StatusWarn = "warn"
	StatusFail = "fail"
	StatusSkip = "skip"
)

// Check is one row of the doctor's report: a failure users see, whether the
// live environment explains it, and what to do.
type Check struct {
	Name    string `json:"name"`
	Symptom string `json:"symptom"`
	Status  string `json:"status"`
	Found   string `json:"found"`
	Fix     string `json:"fix,omitempty"`
}

// Report is the doctor's answer.
type Report struct {
	Checks []Check `json:"checks"`
}

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			return true
		}
	}
	return false
}

// WriteText renders the report for people.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(c.Status), c.Name, c.Symptom)
		fmt.Fprintf(tw, "\t\tfound: %s\n", c.Found)
		if c.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	return tw.Flush()
}

// doctorShmFloor is the /dev/shm size below which the doctor warns when the
// image names no minimum: multi-worker DataLoaders and NCCL's shared-memory
// transport routinely need more than the runtimes' 64 MB default.
const doctorShmFloor = 1 << 30

// Diagnose explains the failures users meet most (torch.cuda unavailable,
// NCCL timeouts and DataLoader bus errors, a compile cache filling the disk,
// storage not mounted) from the live environment, without changing it.
func Diagnose(ctx context.Context, cfg Config, env []string, opts ...Option) (Report, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return Report{}, err
	}
	var r Report
	r.Checks = append(r.Checks, diagnoseGPU(cfg, env, o))
	r.Checks = append(r.Checks, diagnoseShm(cfg))
	st := diagnoseStorage(cfg, o)
	r.Checks = append(r.Checks, st)
	r.Checks = append(r.Checks, diagnoseCaches(ctx, cfg, env, o))
	if cfg.Swappiness != nil {
		c := Check{Name: "swappiness", Symptom: "the host swaps the workload out", Status: StatusOK}
		have := ReadSwappiness(o.proc)
		c.Found = fmt.Sprintf("vm.swappiness is %d, the image asks for %d", have, *cfg.Swappiness)
		if have != *cfg.Swappiness {
			c.Status = StatusWarn
			c.Fix = fmt.Sprintf("vm.swappiness is host-wide: set it on the node (sysctl -w vm.swappiness=%d) or through the platform's node tuning", *cfg.Swappiness)
		}
		r.Checks = append(r.Checks, c)
	}
	return r, nil
}

func diagnoseGPU(cfg Config, env []string, o options) Check {
	c := Check{Name: "gpu", Symptom: "torch.cuda.is_available() is False"}
	d, err := ReadDriver(o.proc, o.dev)
	if err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		c.Fix = "check that the NVIDIA kernel module is loaded on the host (nvidia-smi there)"
		return c
	}
	vis := getenvFrom(env, "NVIDIA_VISIBLE_DEVICES")
	if d.Version == "" {
		c.Status = StatusFail
		if cfg.DriverFloor == "" {
			c.Status = StatusSkip
		}
		c.Found = "no NVIDIA driver visible: /proc/driver/nvidia/version is missing"
		if vis == "void" || vis == "none" {
			c.Found += fmt.Sprintf("; NVIDIA_VISIBLE_DEVICES=%s asks for no GPUs", vis)
		}
		c.Fix = "start the container with GPUs: --gpus all (docker), --device nvidia.com/gpu=all (podman with CDI), or a nvidia.com/gpu resource limit on Kubernetes"
		return c
	}
	c.Found = fmt.Sprintf("driver %s, %d GPU(s)", d.Version, len(d.GPUs))
	if cfg.DriverFloor != "" {
		if cmp, err := version.Compare(d.Version, strings.TrimSpace(cfg.DriverFloor)); err == nil && cmp < 0 {
			c.Status = StatusFail
			c.Found += fmt.Sprintf(", below this image's floor %s", cfg.DriverFloor)
			c.Fix = (&DriverTooOldError{Found: d.Version, Floor: cfg.DriverFloor, CUDA: cfg.Image.CUDA}).Error()
			return c
		}
		c.Found += fmt.Sprintf(", at or above the floor %s", cfg.DriverFloor)
	}
	var missing []string
	for _, n := range []string{"nvidiactl", "nvidia-uvm"} {
		if _, err := os.Stat(filepath.Join(o.dev, n)); err != nil {
			missing = append(missing, "/dev/"+n)
		}
	}
	for _, g := range d.GPUs {
		if !g.DeviceNode {
			missing = append(missing, fmt.Sprintf("/dev/nvidia%d (%s)", g.DeviceMinor, g.BusLocation))
		}
	}
	if len(d.GPUs) == 0 {
		c.Status = StatusFail
		c.Found += "; the driver lists no GPU for this container"
		c.Fix = "request GPUs from the runtime (--gpus all, or NVIDIA_VISIBLE_DEVICES=all with the NVIDIA runtime)"
		return c
	}
	if len(missing) > 0 {
		c.Status = StatusFail
		c.Found += "; missing device nodes: " + strings.Join(missing, ", ")
		c.Fix = "the driver is visible but the device nodes are not: start the container through the NVIDIA runtime or CDI (--gpus all, --device nvidia.com/gpu=all) instead of mounting /proc or libraries by hand"
		return c
	}
	c.Status = StatusOK
	return c
}

func diagnoseShm(cfg Config) Check {
	path := cfg.ShmPath
	if path == "" {
		path = DefaultShmPath
	}
	c := Check{Name: "shm", Symptom: "NCCL timeouts or hangs; DataLoader \"Bus error\""}
	shm, err := MeasureShm(path)
	if err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		c.Fix = fmt.Sprintf("mount a tmpfs at %s: --shm-size=8g or --ipc=host, or a memory-backed emptyDir on Kubernetes", path)
		return c
	}
	c.Found = fmt.Sprintf("%s is %s", path, humanSize(shm.Bytes))
	min, status := cfg.MinShmBytes, StatusFail
	if min <= 0 {
		min, status = doctorShmFloor, StatusWarn
	}
	if shm.Bytes >= min {
		c.Status = StatusOK
		return c
	}
	c.Status = status
	if shm.Bytes == dockerDefaultShm {
		c.Found += " (the container runtime's 64M default)"
	}
	c.Found += fmt.Sprintf(", below %s", humanSize(min))
	c.Fix = fmt.Sprintf("--shm-size=%s or --ipc=host (docker/podman); on Kubernetes an emptyDir with medium: Memory and sizeLimit: %si mounted at %s", lowerSize(humanSize(min)), humanSize(min), path)
	return c
}

func diagnoseStorage(cfg Config, o options) Check {
	c := Check{Name: "storage", Symptom: "checkpoints and caches lost with the container; exit 75 at start"}
	s := cfg.Storage
	if s.Path == "" && s.ReadyFile == "" {
		c.Status, c.Found = StatusSkip, "the image configures no persistent storage"
		return c
	}
	mounts, err := readMounts(o.mountinfo)
	if err != nil {
		c.Status, c.Found = StatusFail, err.Error()
		return c
	}
	var problems []string
	if s.Path != "" {
		if m, ok := mountAt(mounts, s.Path); ok {
			c.Found = fmt.Sprintf("%s is mounted (%s from %s, %s)", s.Path, m.FSType, m.Source, m.Options)
		} else {
			problems = append(problems, s.Path+" is not a mount point")
		}
	}
	if s.ReadyFile != "" {
		if _, err := os.Stat(s.ReadyFile); err != nil {
			problems = append(problems, s.ReadyFile+" does not exist")
		}
	}
	if len(problems) == 0 {
		c.Status = StatusOK
		if c.Found == "" {
			c.Found = s.ReadyFile + " exists"
		}
		return c
	}
	c.Status = StatusFail
	c.Found = strings.Join(problems, "; ")
	c.Fix = fmt.Sprintf("mount the persistent volume at %s (docker -v VOLUME:%s, or a volumeMount on Kubernetes) and let the platform write the ready file; or override the path with %s", storageRoot(s), storageRoot(s), EnvStoragePath)
	return c
}

func diagnoseCaches(ctx context.Context, cfg Config, env []string, o options) Check {
	c := Check{Name: "compile_cache", Symptom: "\"No space left on device\" from torch.compile or Triton; slow first steps in every container"}
	dirs := cacheDirs(cfg)
	for i, d := range dirs {
		if v := getenvFrom(env, d.Env[0]); v != "" {
			dirs[i].Path = v
		}
	}
	tmp := getenvFrom(env, "TMPDIR")
	if tmp == o.tmp {
		tmp = ""
	}
	roots := gcRoots(dirs, o.tmp, tmp)
	if len(roots) == 0 {
		c.Status = StatusOK
		c.Found = "no compile cache configured and no " + filepath.Join(o.tmp, "torchinductor_*")
		c.Fix = "configure caches.inductor and caches.triton on persistent storage so compiled kernels survive restarts"
		return c
	}
	var total int64
	var found, fix []string
	status := StatusOK
	for _, root := range roots {
		size := dirSize(ctx, root)
		total += size
		var st unix.Statfs_t
		if err := unix.Statfs(root, &st); err != nil {
			found = append(found, fmt.Sprintf("%s %s", root, humanSize(size)))
			continue
		}
		free := int64(st.Bavail) * st.Bsize
		all := int64(st.Blocks) * st.Bsize
		found = append(found, fmt.Sprintf("%s %s (%s free of %s)", root, humanSize(size), humanSize(free), humanSize(all)))
		if all > 0 && (free < all/20 || free < 1<<30) && size > 0 {
			status = StatusFail
			fix = append(fix, fmt.Sprintf("the filesystem of %s is nearly full: set the spec's runtime caches.gc_max_size (and gc_max_age) so the init trims it, or remove old entries", root))
		}
	}
	if cfg.Caches.GCMaxBytes > 0 && total > cfg.Caches.GCMaxBytes && status == StatusOK {
		status = StatusWarn
		fix = append(fix, fmt.Sprintf("the caches hold %s, over caches.gc_max_size %s: the init trims them at the next start", humanSize(total), humanSize(cfg.Caches.GCMaxBytes)))
	}
	for _, root := range roots {
		if strings.HasPrefix(root, filepath.Join(o.tmp, "torchinductor_")) {
			if status == StatusOK {
				status = StatusWarn
			}
			fix = append(fix, fmt.Sprintf("%s is torch's default cache in /tmp, lost with the container: set caches.inductor to a directory on storage", root))
			break
		}
	}
	c.Status, c.Found, c.Fix = status, strings.Join(found, "; "), strings.Join(fix, "; ")
	return c
}

// dirSize adds up the sizes of the files under root, not following links.
func dirSize(ctx context.Context, root string) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if ctx.Err() != nil {
			return errors.New("cancelled")
		}
		if !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
