package kubernetes

import (
	"errors"

	"k8s.io/client-go/rest"
)

// Option configures the kubernetes runtime (New).
type Option func(*options) error

type options struct {
	kubeconfig string
	context    string
	namespace  string
	keep       bool
	config     *rest.Config
	job        JobConfig
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithKubeconfig sets the kubeconfig file. The default is client-go's:
// $KUBECONFIG, else ~/.kube/config, else the in-cluster configuration.
func WithKubeconfig(path string) Option {
	return func(o *options) error {
		o.kubeconfig = path
		return nil
	}
}

// WithContext sets the kubeconfig context. The default is its current one.
func WithContext(name string) Option {
	return func(o *options) error {
		o.context = name
		return nil
	}
}

// WithNamespace sets the namespace of the Job and its ConfigMap. The
// default is the context's namespace, else the in-cluster one, else
// "default".
func WithNamespace(ns string) Option {
	return func(o *options) error {
		o.namespace = ns
		return nil
	}
}

// WithConfig sets a ready client configuration; it overrides WithKubeconfig
// and WithContext (tests, in-process callers). The default is none.
func WithConfig(c *rest.Config) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("kubernetes runtime: nil client configuration")
		}
		o.config = c
		return nil
	}
}

// WithKeep leaves the Job, its pod and the ConfigMap in place (debugging).
// The default is to delete them.
func WithKeep(keep bool) Option {
	return func(o *options) error {
		o.keep = keep
		return nil
	}
}

// WithStorageClaim sets the PersistentVolumeClaim mounted at the lock's
// runtime.storage.path (JobConfig.StorageClaim). The default is an
// emptyDir.
func WithStorageClaim(claim string) Option {
	return func(o *options) error {
		o.job.StorageClaim = claim
		return nil
	}
}

// WithPython sets the interpreter inside the image (JobConfig.Python). The
// default is the lock's (verify.ImagePython), else python3.
func WithPython(py string) Option {
	return func(o *options) error {
		o.job.Python = py
		return nil
	}
}

// WithShmSize sets the size limit of the Job's memory-backed /dev/shm, a
// Kubernetes quantity (JobConfig.ShmSize). The default is the lock's
// runtime.min_shm_bytes, at least 1Gi (verify.ShmBytes).
func WithShmSize(size string) Option {
	return func(o *options) error {
		o.job.ShmSize = size
		return nil
	}
}

// WithAllReduceIters sets the Job's timed and warm-up all-reduce
// iterations. The default is 20 and 5.
func WithAllReduceIters(iters, warmup int) Option {
	return func(o *options) error {
		if iters <= 0 || warmup < 0 {
			return errors.New("kubernetes runtime: all-reduce iterations must be positive")
		}
		o.job.Iters, o.job.Warmup = iters, warmup
		return nil
	}
}
