package mirror

import (
	"errors"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
)

// Option configures Run and Copy.
type Option func(*options) error

type options struct {
	transport http.RoundTripper
	keychain  authn.Keychain
	remote    []remote.Option
	access    *auth.Access
}

func makeOptions(opts []Option) (*options, error) {
	a := auth.Default()
	o := &options{transport: a.Transport(), keychain: authn.DefaultKeychain, access: a}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithAccess takes the keychain and the transport (TLS trust: the system
// store plus --ca-file) from a, and makes a registry's 401/403 an
// *auth.Error (exit 77) naming it. The default is auth.Default()'s: the
// Docker config and the system store.
func WithAccess(a *auth.Access) Option {
	return func(o *options) error {
		if a == nil {
			return errors.New("access is nil")
		}
		o.access, o.keychain, o.transport = a, a.Keychain(), a.Transport()
		return nil
	}
}

// WithRemoteOptions adds go-containerregistry options (jobs, user agent)
// to every registry call; a transport belongs in WithAccess, so that
// uploads are counted. The default is none.
func WithRemoteOptions(opts ...remote.Option) Option {
	return func(o *options) error {
		o.remote = append(o.remote, opts...)
		return nil
	}
}
