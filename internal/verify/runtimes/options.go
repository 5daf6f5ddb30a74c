package runtimes

import (
	"errors"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/verify/containerd"
	"imagectl/internal/verify/kubernetes"
	"imagectl/internal/verify/podman"
)

// Option configures Select: the settings every runtime shares, and each
// runtime's own options.
type Option func(*options) error

type options struct {
	detector          Detector
	autoInPlace       *name.Digest
	from              string
	python            string
	storage           string
	shmSize           string
	gpus              int
	containerdAddress string
	containerd        []containerd.Option
	podman            []podman.Option
	kubernetes        []kubernetes.Option
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

// WithDetector sets how auto looks at the host. The default is
// Detector{}, the real host.
func WithDetector(d Detector) Option {
	return func(o *options) error {
		o.detector = d
		return nil
	}
}

// WithAutoInPlace lets auto pick in-place when this process runs inside
// *img itself (its IMAGECTL_IMAGE_DIGEST is img's digest); nil leaves
// in-place out of auto. The default is nil: auto never picks in-place (a
// release verifies images it just built, never its own).
func WithAutoInPlace(img *name.Digest) Option {
	return func(o *options) error {
		o.autoInPlace = img
		return nil
	}
}

// WithFrom has podman and docker run src (oci:DIR, oci-archive:FILE)
// instead of the image by digest; the other runtimes refuse it. A run of
// something other than the digest cannot prove the digest: its result is
// not signed unless the init's fingerprint names the digest. The default
// is the image by digest.
func WithFrom(src string) Option {
	return func(o *options) error {
		o.from = src
		return nil
	}
}

// WithPython sets the image's interpreter. The default is the runtime's
// (the lock's: verify.ImagePython).
func WithPython(py string) Option {
	return func(o *options) error {
		o.python = py
		return nil
	}
}

// WithStorage sets the host folder container runtimes (containerd, podman,
// docker) mount at the lock's runtime.storage.path. The default is a
// throwaway folder per image holding the lock's ready file
// (verify.ReadyStorage), removed when the runtime is closed.
func WithStorage(dir string) Option {
	return func(o *options) error {
		o.storage = dir
		return nil
	}
}

// WithShmSize sets the /dev/shm size (ParseShmSize; for kubernetes, a
// Kubernetes quantity). The default is verify.ShmBytes of the lock.
func WithShmSize(size string) Option {
	return func(o *options) error {
		o.shmSize = size
		return nil
	}
}

// WithGPUs sets how many GPUs a container of containerd, podman or docker
// gets. The default, 0, is all.
func WithGPUs(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return errors.New("negative GPU count")
		}
		o.gpus = n
		return nil
	}
}

// WithContainerdAddress sets containerd's socket, where auto looks and the
// containerd runtime connects. The default is $CONTAINERD_ADDRESS, else
// containerd.DefaultAddress.
func WithContainerdAddress(addr string) Option {
	return func(o *options) error {
		o.containerdAddress = addr
		return nil
	}
}

// WithContainerd adds options for the containerd runtime, applied after
// the common ones. The default is none.
func WithContainerd(opts ...containerd.Option) Option {
	return func(o *options) error {
		o.containerd = append(o.containerd, opts...)
		return nil
	}
}

// WithPodman adds options for the podman and docker runtimes, applied
// after the common ones. The default is none.
func WithPodman(opts ...podman.Option) Option {
	return func(o *options) error {
		o.podman = append(o.podman, opts...)
		return nil
	}
}

// WithKubernetes adds options for the kubernetes runtime, applied after the
// common ones. The default is none.
func WithKubernetes(opts ...kubernetes.Option) Option {
	return func(o *options) error {
		o.kubernetes = append(o.kubernetes, opts...)
		return nil
	}
}
