package promote

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Option configures Run and Pin.
type Option func(*options) error

type options struct {
	trustedKeys  []string
	verifierKeys []string
	confirm      bool
	lockPath     string
	remote       []remote.Option
	// requireContainer: the verification gate accepts only results of a
	// container runtime that started the digest.
	requireContainer bool
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

// WithTrustedKeys sets the public keys (cosign.pub files) whose signatures
// and lock attestations promotion accepts. The default is none: every
// digest is refused by the signature gate.
func WithTrustedKeys(paths ...string) Option {
	return func(o *options) error {
		for _, p := range paths {
			if p == "" {
				return errors.New("trusted key path is empty")
			}
		}
		o.trustedKeys = append(o.trustedKeys, paths...)
		return nil
	}
}

// WithVerifierKeys sets the public keys whose verification attestations
// promotion accepts. The default is none: every digest is refused by the
// verification gate.
func WithVerifierKeys(paths ...string) Option {
	return func(o *options) error {
		for _, p := range paths {
			if p == "" {
				return errors.New("verifier key path is empty")
			}
		}
		o.verifierKeys = append(o.verifierKeys, paths...)
		return nil
	}
}

// WithConfirm makes Run act. The default is false: a dry run that checks
// the gates and reports the plan without writing anything.
func WithConfirm(confirm bool) Option {
	return func(o *options) error { o.confirm = confirm; return nil }
}

// WithLockFile sets the lock in git that the lock gate compares against.
// The default is lock.json beside the release file.
func WithLockFile(path string) Option {
	return func(o *options) error { o.lockPath = path; return nil }
}

// WithRemoteOptions passes options (auth, transport) to every registry
// call. The default is anonymous access with ggcr's default transport.
func WithRemoteOptions(opts ...remote.Option) Option {
	return func(o *options) error { o.remote = append(o.remote, opts...); return nil }
}

func (o *options) remoteOptions(ctx context.Context) []remote.Option {
	return append([]remote.Option{remote.WithContext(ctx)}, o.remote...)
}

// WithRequireContainerRuntime makes the verification gate accept only a
// result whose probes ran in a container the runtime started from exactly
// this digest (containerd, podman, docker or a Kubernetes Job, with the
// result's proof "runtime" or, for a Job, the init's fingerprint naming
// the digest): never an in-place run. The default is false: any passing
// result signed by a trusted verifier key.
func WithRequireContainerRuntime(require bool) Option {
	return func(o *options) error { o.requireContainer = require; return nil }
}
