package discover

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/promote"
	"imagectl/internal/sign"
)

// Option configures Releases, Compare and Resolver.
type Option func(*options) error

type options struct {
	keys         []string
	verifierKeys []string
	access       *auth.Access
	skip         []string
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

// WithKeys sets the platform's public keys: signing (signatures, lock,
// SBOM and vulnerability attestations) and verifier (verification
// attestations). The default is none: nothing verifies, every release is
// listed unverified and Compare refuses every input.
func WithKeys(signing, verifier []string) Option {
	return func(o *options) error {
		for _, p := range append(append([]string(nil), signing...), verifier...) {
			if p == "" {
				return errors.New("public key path is empty")
			}
		}
		o.keys = append(o.keys, signing...)
		o.verifierKeys = append(o.verifierKeys, verifier...)
		return nil
	}
}

// WithAccess sets the registry credentials and TLS trust. The default is
// auth.Default(): the Docker config and the system trust store.
func WithAccess(a *auth.Access) Option {
	return func(o *options) error { return auth.SetAccess(&o.access, a) }
}

// WithSkipPlatforms is promote.WithSkipPlatforms for the gates the
// Resolver runs. The default is none.
func WithSkipPlatforms(platforms ...string) Option {
	return func(o *options) error { o.skip = append(o.skip, platforms...); return nil }
}

func (o *options) remoteOptions(ctx context.Context) []remote.Option {
	return append(o.access.RemoteOptions(), remote.WithContext(ctx))
}

func (o *options) signOptions() []sign.Option {
	return []sign.Option{sign.WithAccess(o.access)}
}

// pinOptions are the gates of imagectl pin under the same keys and access.
func (o *options) pinOptions() []promote.Option {
	return []promote.Option{promote.WithTrustedKeys(o.keys...), promote.WithVerifierKeys(o.verifierKeys...),
		promote.WithAccess(o.access), promote.WithSkipPlatforms(o.skip...)}
}
