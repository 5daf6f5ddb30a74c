package runtime

import (
	"errors"
	"os"
	"time"
)

// Option configures where the init looks and how it polls; the defaults are
// the real system paths. Tests point them at temporary directories.
type Option func(*options) error

type options struct {
	proc      string
	dev       string
	tmp       string
	fallback  string
	mountinfo string
	sshRoot   string
	runDir    string
	euid      int
	poll      time.Duration
	// notReady, when set, is called after each storage check that found
	// the storage not ready, before the wait for the next (tests use it to
	// change the world between two checks instead of sleeping).
	notReady func()
}

func makeOptions(opts []Option) (options, error) {
	o := options{
		proc:     "/proc",
		dev:      "/dev",
		tmp:      "/tmp",
		fallback: "/tmp/imagectl-local",
		sshRoot:  "/",
		runDir:   "/run/imagectl",
		euid:     os.Geteuid(),
		poll:     100 * time.Millisecond,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	if o.mountinfo == "" {
		o.mountinfo = o.proc + "/self/mountinfo"
	}
	return o, nil
}

// WithProcRoot reads the driver, sysctls and mounts under dir instead of
// /proc. The default is /proc.
func WithProcRoot(dir string) Option {
	return func(o *options) error {
		if dir == "" {
			return errors.New("empty proc root")
		}
		o.proc = dir
		return nil
	}
}

// WithDevRoot looks for the GPU device nodes under dir. The default is /dev.
func WithDevRoot(dir string) Option {
	return func(o *options) error { o.dev = dir; return nil }
}

// WithTmpRoot is where the init looks for stale /tmp/torchinductor_* caches.
// The default is /tmp.
func WithTmpRoot(dir string) Option {
	return func(o *options) error { o.tmp = dir; return nil }
}

// WithFallbackRoot is where paths on storage are moved when storage is
// optional and never became ready. The default is /tmp/imagectl-local.
func WithFallbackRoot(dir string) Option {
	return func(o *options) error { o.fallback = dir; return nil }
}

// WithPollInterval sets how often the storage wait checks again. The default
// is 100ms.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("poll interval must be positive")
		}
		o.poll = d
		return nil
	}
}
