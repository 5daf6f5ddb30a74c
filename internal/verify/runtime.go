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

// Runtime runs probes inside the image.
type Runtime interface {
	// Name is how the result names the runtime: in-place, podman, ...
	Name() string
	// Exec runs p inside the image and returns its standard output. A probe
	// that exits non-zero returns a *ProbeError with its stderr's tail.
	Exec(ctx context.Context, p Probe) ([]byte, error)
	// Close removes what the runtime created (the probe scripts' folder).
	Close() error
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

// probeDir writes the probe scripts into a new temporary folder.
type probeDir struct {
	once sync.Once
	dir  string
	err  error
}

func (d *probeDir) path() (string, error) {
	d.once.Do(func() {
		scripts, err := ProbeScripts()
		if err != nil {
			d.err = err
			return
		}
		dir, err := os.MkdirTemp("", "imagectl-probes-")
		if err != nil {
			d.err = err
			return
		}
		// Readable by any user the image runs as.
		if err := os.Chmod(dir, 0o755); err != nil {
			d.err = err
			return
		}
		for n, b := range scripts {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				d.err = err
				return
			}
		}
		d.dir = dir
	})
	return d.dir, d.err
}

func (d *probeDir) close() error {
	if d.dir == "" {
		return nil
	}
	return os.RemoveAll(d.dir)
}

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

// runCommand runs cmd in its own process group (so that a cancelled
// context kills the probe's children too, e.g. the all-reduce ranks) and
// returns its stdout.
func runCommand(ctx context.Context, probe string, cmd *exec.Cmd) ([]byte, error) {
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

// InPlace runs the probes in this process's own environment: imagectl is
// already inside the image (a CI job that runs the image on a GPU runner).
type InPlace struct {
	// Python is the image's interpreter. The default is /opt/venv/bin/python
	// when it exists, else python3 on PATH.
	Python string
	probes probeDir
}

// Name implements Runtime.
func (*InPlace) Name() string { return "in-place" }

// Exec implements Runtime.
func (r *InPlace) Exec(ctx context.Context, p Probe) ([]byte, error) {
	dir, err := r.probes.path()
	if err != nil {
		return nil, fmt.Errorf("writing probe scripts: %w", err)
	}
	py := firstNonEmpty(r.Python, p.Python)
	if py == "" {
		py = DefaultPython()
	}
	argv := append([]string{filepath.Join(dir, p.Script)}, p.Args...)
	return runCommand(ctx, p.Name, exec.CommandContext(ctx, py, argv...))
}

// Close implements Runtime.
func (r *InPlace) Close() error { return r.probes.close() }

// DefaultPython is the in-place interpreter: /opt/venv/bin/python when it
// exists (the venv imagectl builds), else python3.
func DefaultPython() string {
	if _, err := os.Stat("/opt/venv/bin/python"); err == nil {
		return "/opt/venv/bin/python"
	}
	return "python3"
}

// Recorded replays the output of probes that ran elsewhere, e.g. the logs
// of the Kubernetes Job RenderJob writes: Exec returns the whole log and
// the parser picks the probe's own line.
type Recorded struct {
	Log []byte
}

// Name implements Runtime.
func (*Recorded) Name() string { return "kubernetes" }

// Exec implements Runtime.
func (r *Recorded) Exec(_ context.Context, p Probe) ([]byte, error) {
	if len(r.Log) == 0 {
		return nil, &ProbeError{Probe: p.Name, Err: errors.New("the recorded log is empty")}
	}
	return r.Log, nil
}

// Close implements Runtime.
func (*Recorded) Close() error { return nil }
