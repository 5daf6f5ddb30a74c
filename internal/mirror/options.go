package mirror

import (
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Option configures Run and Copy.
type Option func(*options) error

type options struct {
	transport http.RoundTripper
	keychain  authn.Keychain
	remote    []remote.Option
}

func makeOptions(opts []Option) (*options, error) {
	o := &options{transport: remote.DefaultTransport, keychain: authn.DefaultKeychain}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithTransport sets the HTTP transport for both registries (TLS roots,
// proxies). The default is remote.DefaultTransport.
func WithTransport(rt http.RoundTripper) Option {
	return func(o *options) error {
		o.transport = rt
		return nil
	}
}

// WithKeychain sets where registry credentials come from. The default is
// authn.DefaultKeychain (the Docker config).
func WithKeychain(kc authn.Keychain) Option {
	return func(o *options) error {
		o.keychain = kc
		return nil
	}
}

// WithRemoteOptions adds go-containerregistry options (jobs, user agent)
// to every registry call; a transport belongs in WithTransport, so that
// uploads are counted. The default is none.
func WithRemoteOptions(opts ...remote.Option) Option {
	return func(o *options) error {
		o.remote = append(o.remote, opts...)
		return nil
	}
}
