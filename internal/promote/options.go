package promote

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/scan/report"
)

// Option configures Run and Pin.
type Option func(*options) error

type options struct {
	trustedKeys  []string
	verifierKeys []string
	confirm      bool
	lockPath     string
	access       *auth.Access
	remote       []remote.Option
	// requireContainer: the verification gate accepts only results of a
	// container runtime that started the digest.
	requireContainer bool
	// skipPlatforms are platforms of an image index whose images may go
	// unverified (WithSkipPlatforms).
	skipPlatforms []string
	// vulnPolicies are the vulnerabilities gate's policies by image name
	// (WithVulnerabilityPolicies, vulngate.go).
	vulnPolicies map[string]report.Policy
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{access: auth.Default()}
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

// WithAccess sets the registry credentials and TLS trust of every registry
// call (the copies, the tags, the gates' cosign checks); a 401/403 is an
// *auth.Error (exit 77), not a gate refusal. The default is auth.Default():
// the Docker config and the system trust store.
func WithAccess(a *auth.Access) Option {
	return func(o *options) error { return auth.SetAccess(&o.access, a) }
}

// WithRemoteOptions passes further options to every registry call, after
// WithAccess's keychain and transport, which they override. The default is
// none.
func WithRemoteOptions(opts ...remote.Option) Option {
	return func(o *options) error { o.remote = append(o.remote, opts...); return nil }
}

func (o *options) remoteOptions(ctx context.Context) []remote.Option {
	ro := append(o.access.RemoteOptions(), o.remote...)
	return append(ro, remote.WithContext(ctx))
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

// WithSkipPlatforms names the platforms of an image index (a multi-platform
// build) that the verification gate lets through unverified, e.g.
// "linux/arm64" when no GH200 verifier ran this month; at least one
// platform must still be verified. The default is none: every platform's
// image needs a passing verification of its own digest.
func WithSkipPlatforms(platforms ...string) Option {
	return func(o *options) error {
		for _, p := range platforms {
			if p == "" {
				return errors.New("skip platform is empty")
			}
		}
		o.skipPlatforms = append(o.skipPlatforms, platforms...)
		return nil
	}
}
