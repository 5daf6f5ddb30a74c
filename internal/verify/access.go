package verify

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
)

// WithRegistryAccess has Run check, before any probe, that the registry
// lets a read the image's digest when the runtime pulls it (containerd, or
// podman/docker running the digest): a 401/403 is then an *auth.Error (exit
// 77) naming the registry and the Docker config entry tried, instead of a
// probe that could not start. Other failures are left to the runtime. The
// default is no check.
func WithRegistryAccess(a *auth.Access) Option {
	return func(o *options) error {
		if a == nil {
			return errors.New("registry access is nil")
		}
		o.access = a
		return nil
	}
}

// checkPull is WithRegistryAccess's check.
func (o *options) checkPull(ctx context.Context) error {
	if o.access == nil || o.image == nil || !pullsImage(o.runtime, o.image.String()) {
		return nil
	}
	_, err := remote.Head(*o.image, append(o.access.RemoteOptions(), remote.WithContext(ctx))...)
	var ae *auth.Error
	if err := o.access.Classify(err); errors.As(err, &ae) {
		return err
	}
	return nil
}

// pullsImage reports whether rt pulls ref from its registry.
func pullsImage(rt Runtime, ref string) bool {
	switch r := rt.(type) {
	case *Containerd:
		return true
	case *Podman:
		return r.Image == ref
	}
	return false
}
