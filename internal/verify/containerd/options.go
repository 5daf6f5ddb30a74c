package containerd

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// Option configures the containerd runtime (New).
type Option func(*options) error

type options struct {
	address     string
	namespace   string
	snapshotter string
	unpacks     int
	python      string
	gpus        int
	cdiSpecDirs []string
	shmBytes    int64
	storage     string
	storagePath string
	tls         *tls.Config
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{unpacks: DefaultUnpackConcurrency}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithAddress sets containerd's socket. The default is
// $CONTAINERD_ADDRESS, else DefaultAddress.
func WithAddress(addr string) Option {
	return func(o *options) error {
		o.address = addr
		return nil
	}
}

// WithNamespace sets the containerd namespace images and containers live
// in. The default is $CONTAINERD_NAMESPACE (as for ctr), else "imagectl".
func WithNamespace(ns string) Option {
	return func(o *options) error {
		o.namespace = ns
		return nil
	}
}

// WithSnapshotter sets the snapshotter that unpacks the image. The default
// is "overlayfs". Another (e.g. "stargz", stargz-snapshotter's proxy
// plugin) gets the layers' image and digest in the snapshot labels, as CRI
// passes them, so that a remote snapshotter can mount eStargz layers
// lazily.
func WithSnapshotter(name string) Option {
	return func(o *options) error {
		o.snapshotter = name
		return nil
	}
}

// DefaultUnpackConcurrency is how many layers WithUnpackConcurrency's
// default unpacks at once.
const DefaultUnpackConcurrency = 4

// WithUnpackConcurrency sets how many layers containerd unpacks at once
// while it pulls: each into a snapshot of its own, rebased onto its parent
// when it commits. A snapshotter without containerd's rebase capability
// (overlayfs has it unless containerd runs in a user namespace;
// stargz-snapshotter does not) unpacks one at a time whatever n says, as
// does n = 1. The default is DefaultUnpackConcurrency.
func WithUnpackConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("containerd runtime: unpack concurrency %d: want 1 or more", n)
		}
		o.unpacks = n
		return nil
	}
}

// WithPython sets the interpreter inside the image. The default is the
// probe's (the lock's: verify.ImagePython), else python3.
func WithPython(py string) Option {
	return func(o *options) error {
		o.python = py
		return nil
	}
}

// WithGPUs sets how many nvidia.com/gpu CDI devices a GPU probe gets: N
// takes the first N indexed devices and fails when the host's CDI specs
// have fewer. The default, 0, is nvidia.com/gpu=all.
func WithGPUs(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return errors.New("containerd runtime: negative GPU count")
		}
		o.gpus = n
		return nil
	}
}

// WithCDISpecDirs sets where the CDI specs are read from. The default is
// the CDI library's (/etc/cdi, /var/run/cdi).
func WithCDISpecDirs(dirs ...string) Option {
	return func(o *options) error {
		o.cdiSpecDirs = append([]string{}, dirs...)
		return nil
	}
}

// WithShmBytes sizes /dev/shm. The default is 1 GiB (callers pass
// verify.ShmBytes of the lock).
func WithShmBytes(n int64) Option {
	return func(o *options) error {
		o.shmBytes = n
		return nil
	}
}

// WithStorage mounts the host folder dir read-write at path (the lock's
// runtime.storage.path). The default mounts nothing.
func WithStorage(dir, path string) Option {
	return func(o *options) error {
		o.storage, o.storagePath = dir, path
		return nil
	}
}

// WithTLS sets the registries' TLS configuration (containerd's DefaultTLS,
// e.g. auth.Access.TLSConfig for a private CA). The default is the system
// trust store.
func WithTLS(c *tls.Config) Option {
	return func(o *options) error {
		o.tls = c
		return nil
	}
}
