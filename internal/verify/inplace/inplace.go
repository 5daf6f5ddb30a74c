// Package inplace runs verification probes in this process's own
// environment: imagectl is already inside the image (a CI job that runs
// the image on a GPU runner).
package inplace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"imagectl/internal/verify"
)

// Runtime runs each probe as a child process of imagectl.
type Runtime struct {
	o      options
	probes verify.ProbeDir
}

// New returns the in-place runtime.
func New(opts ...Option) (*Runtime, error) {
	o := &options{}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return &Runtime{o: *o}, nil
}

// Option configures the in-place runtime (New).
type Option func(*options) error

type options struct {
	python string
}

// WithPython sets the image's interpreter. The default is the probe's (the
// lock's: verify.ImagePython), else defaultPython().
func WithPython(py string) Option {
	return func(o *options) error {
		o.python = py
		return nil
	}
}

// Name implements verify.Runtime.
func (*Runtime) Name() string { return verify.RuntimeInPlace }

// Exec implements verify.Execer.
func (r *Runtime) Exec(ctx context.Context, p verify.Probe) ([]byte, error) {
	dir, err := r.probes.Path()
	if err != nil {
		return nil, fmt.Errorf("writing probe scripts: %w", err)
	}
	py := r.o.python
	if py == "" {
		py = p.Python
	}
	if py == "" {
		py = defaultPython()
	}
	argv := append([]string{filepath.Join(dir, p.Script)}, p.Args...)
	return verify.RunCommand(ctx, p.Name, exec.CommandContext(ctx, py, argv...))
}

// Close implements verify.Runtime.
func (r *Runtime) Close() error { return r.probes.Close() }

// defaultPython is the in-place interpreter: /opt/venv/bin/python when it
// exists (the venv imagectl builds), else python3.
func defaultPython() string {
	if _, err := os.Stat("/opt/venv/bin/python"); err == nil {
		return "/opt/venv/bin/python"
	}
	return "python3"
}
