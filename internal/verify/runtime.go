package verify

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"imagectl/internal/logs"
	"imagectl/internal/owner"
)

//go:embed probes/*.py
var probeFS embed.FS

// Probe is one run of an embedded probe script (internal/verify/probes).
// Each script prints one JSON line whose "probe" field is Name.
type Probe struct {
	// Name is the "probe" field of the script's JSON line.
	Name string
	// Script is the file name under probes/, e.g. "env.py".
	Script string
	// Args are the script's arguments.
	Args []string
	// GPU asks the runtime to give the probe the host's GPUs.
	GPU bool
	// Python is the image's interpreter for this probe (ImagePython of the
	// lock); a runtime's own Python setting wins over it.
	Python string
}

// Runtime runs probes inside the image: it is an Execer (one probe at a
// time) or a BatchRuntime (the whole probe set at once). Each runtime lives
// in a package of its own (internal/verify/inplace, podman, containerd,
// kubernetes) with its own options; internal/verify/runtimes selects one.
type Runtime interface {
	// Name is how the result names the runtime: in-place, podman, ...
	Name() string
	// Close removes what the runtime created (the probe scripts' folder).
	Close() error
}

// Execer is a Runtime that runs one probe at a time.
type Execer interface {
	Runtime
	// Exec runs p inside the image and returns its standard output. A probe
	// that exits non-zero returns a *ProbeError with its stderr's tail.
	Exec(ctx context.Context, p Probe) ([]byte, error)
}

// BatchRuntime is a Runtime that cannot run one probe at a time: it runs
// the verification's whole probe set inside the image as one batch (a
// Kubernetes Job runs its fixed probe script). Run calls RunBatch once,
// before the first probe, and evaluates each probe's line of its output.
type BatchRuntime interface {
	Runtime
	// RunBatch runs every probe and returns their output: one JSON line per
	// probe, whose "probe" field names it.
	RunBatch(ctx context.Context) ([]byte, error)
}

// Wrapper is a Runtime that wraps another (a throwaway storage folder
// removed on Close, for example). Run looks through it for what the
// wrapped runtime implements (BatchRuntime, DigestRunner, ...).
type Wrapper interface {
	Unwrap() Runtime
}

// unwrap is the innermost runtime rt wraps.
func unwrap(rt Runtime) Runtime {
	for {
		w, ok := rt.(Wrapper)
		if !ok {
			return rt
		}
		rt = w.Unwrap()
	}
}

// ProbeError is a probe process that exited non-zero.
type ProbeError struct {
	Probe  string
	Err    error
	Stderr string
}

func (e *ProbeError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("probe %s: %v", e.Probe, e.Err)
	}
	return fmt.Sprintf("probe %s: %v: %s", e.Probe, e.Err, e.Stderr)
}

func (e *ProbeError) Unwrap() error { return e.Err }

// ProbeScripts returns the embedded probe scripts by file name.
func ProbeScripts() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(probeFS, "probes", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := probeFS.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.Base(p)] = b
		return nil
	})
	return out, err
}

// ProbeDir writes the probe scripts into a new temporary folder, once, on
// the first call to Path, after removing the folders of runs that were
// killed (owner.SweepTemp). Its zero value is ready to use.
type ProbeDir struct {
	once sync.Once
	dir  string
	err  error
}

// Path returns the folder, writing it on the first call.
func (d *ProbeDir) Path() (string, error) {
	d.once.Do(func() {
		scripts, err := ProbeScripts()
		if err != nil {
			d.err = err
			return
		}
		_, _ = owner.SweepTemp(probeDirPattern, nil) // best effort: a folder it cannot remove is only files
		dir, err := owner.MkdirTemp(probeDirPattern)
		if err != nil {
			d.err = err
			return
		}
		// Readable by any user the image runs as.
		if err := os.Chmod(dir, 0o755); err != nil {
			_ = owner.RemoveTemp(dir)
			d.err = err
			return
		}
		for n, b := range scripts {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				_ = owner.RemoveTemp(dir)
				d.err = err
				return
			}
		}
		d.dir = dir
	})
	return d.dir, d.err
}

// Close removes the folder.
func (d *ProbeDir) Close() error {
	if d.dir == "" {
		return nil
	}
	return owner.RemoveTemp(d.dir)
}

// probeDirPattern names ProbeDir's folders in TMPDIR.
const probeDirPattern = "imagectl-probes-"

// tailWriter keeps the last n bytes written to it.
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

// RunCommand runs cmd, the process of the probe named probe, in its own
// process group (so that a cancelled context kills the probe's children
// too, e.g. the all-reduce ranks) and returns its stdout; a non-zero exit is
// a *ProbeError with the tail of its stderr.
func RunCommand(ctx context.Context, probe string, cmd *exec.Cmd) ([]byte, error) {
	var stdout bytes.Buffer
	stderr := &tailWriter{n: 4096}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	logs.From(ctx).Debug("running probe", "probe", probe, "argv", cmd.Args)
	err := cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return stdout.Bytes(), &ProbeError{Probe: probe, Err: err, Stderr: string(bytes.TrimSpace(stderr.b))}
	}
	return stdout.Bytes(), nil
}

// Recorded replays the output of probes that ran elsewhere, e.g. the log
// of the Kubernetes Job kubernetes.RenderJob writes: a BatchRuntime whose
// batch is the log, from which Run picks each probe's own line.
type Recorded struct {
	Log []byte
}

// Name implements Runtime.
func (*Recorded) Name() string { return "kubernetes" }

// RunBatch implements BatchRuntime.
func (r *Recorded) RunBatch(context.Context) ([]byte, error) {
	if len(r.Log) == 0 {
		return nil, errors.New("the recorded log is empty")
	}
	return r.Log, nil
}

// Close implements Runtime.
func (*Recorded) Close() error { return nil }
