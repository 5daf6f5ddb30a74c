package verify

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/auth"
)

// Option configures Run.
type Option func(*options) error

type options struct {
	image   *name.Digest
	runtime Runtime // what Run closes
	base    Runtime // what runtime wraps (Wrapper), which runs the probes
	prober  GPUProber
	iters   int
	warmup  int
	now     func() time.Time
	access  *auth.Access
	target  *Target
	startup bool
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		prober: NVML{},
		iters:  20,
		warmup: 5,
		now:    time.Now,
	}
	// Every option applies, so that Run can close the runtime it was given
	// whatever else is wrong.
	var err error
	for _, opt := range opts {
		if oerr := opt(o); oerr != nil && err == nil {
			err = oerr
		}
	}
	switch {
	case o.runtime == nil:
		return nil, errors.Join(err, errors.New("verify: no runtime: give one with WithRuntime"))
	case err != nil:
		_ = o.runtime.Close()
		return nil, err
	}
	o.base = unwrap(o.runtime)
	switch o.base.(type) {
	case Execer, BatchRuntime:
	default:
		_ = o.runtime.Close()
		return nil, fmt.Errorf("verify: runtime %s runs no probes: want an Execer or a BatchRuntime", o.base.Name())
	}
	return o, nil
}

// WithImage names the image digest the result is bound to. The default is
// none: Result.Image and Result.Digest stay empty.
func WithImage(ref name.Digest) Option {
	return func(o *options) error {
		o.image = &ref
		return nil
	}
}

// WithRuntime sets how the probes run inside the image: an Execer or a
// BatchRuntime, or a Wrapper of one (internal/verify/runtimes builds them).
// Run closes it when it returns (Close must tolerate a second call). There
// is no default: Run needs one.
func WithRuntime(r Runtime) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("verify: nil runtime")
		}
		o.runtime = r
		return nil
	}
}

// WithGPUProber sets where host GPU facts come from. The default is NVML{}.
// nil takes them from the image's torch probe instead (driver from
// /proc/driver/nvidia/version, devices from torch), for probe output
// recorded on another machine.
func WithGPUProber(p GPUProber) Option {
	return func(o *options) error {
		o.prober = p
		return nil
	}
}

// WithAllReduceIters sets the timed all-reduce iterations and the warm-up
// iterations before them. The default is 20 and 5.
func WithAllReduceIters(iters, warmup int) Option {
	return func(o *options) error {
		if iters <= 0 || warmup < 0 {
			return errors.New("verify: all-reduce iterations must be positive")
		}
		o.iters, o.warmup = iters, warmup
		return nil
	}
}

// WithStartup has Run time the image's first step before anything else
// (Result.Startup): `import torch` and one matmul on the GPU (the CPU
// without one), measured from the runtime's first call, so a cold runtime's
// pull is in it, and the files the step took listed (Startup.Files). The
// check "startup.first_step" passes when the step ran. The default is off.
func WithStartup(on bool) Option {
	return func(o *options) error {
		o.startup = on
		return nil
	}
}
