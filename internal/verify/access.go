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
	if o.access == nil || o.image == nil || !pullsImage(o.base, o.image.String()) {
		return nil
	}
	_, err := remote.Head(*o.image, append(o.access.RemoteOptions(), remote.WithContext(ctx))...)
	var ae *auth.Error
	if err := o.access.Classify(err); errors.As(err, &ae) {
		return err
	}
	return nil
}

// RegistryPuller is a Runtime that pulls the image from its registry
// itself (containerd, or podman/docker running a registry reference).
type RegistryPuller interface {
	// Pulls is the reference the runtime pulls, "" when it pulls none (an
	// OCI layout on disk).
	Pulls() string
}

// pullsImage reports whether rt pulls ref from its registry.
func pullsImage(rt Runtime, ref string) bool {
	p, ok := rt.(RegistryPuller)
	return ok && p.Pulls() == ref
}
