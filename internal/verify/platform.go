package verify

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/sign"
)

// HostPlatform is the platform of the machine verify runs on ("linux/amd64").
func HostPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// Target is what verify runs for a multi-platform image on one host: the
// host platform's image inside the index and its view of the lock.
type Target struct {
	// Index is the image index the user named.
	Index name.Digest
	// Platform is the host's platform; Image its image in Index; Lock
	// that platform's view of the lock (lock.ForPlatform).
	Platform string
	Image    name.Digest
	Lock     *lock.Lock
	// Others are the index's other platforms, not verified on this host.
	Others []PlatformStatus
}

// ForHost picks, from the image index ref built from the multi-platform
// lock l, the image of platform host (HostPlatform() on the GPU machine),
// and lists the others as not verified. a carries the registry
// credentials and TLS; nil is the default keychain. It fails when l has no such
// platform, or when the index is not exactly l's platforms.
func ForHost(ctx context.Context, ref name.Digest, l *lock.Lock, host string, a *auth.Access) (*Target, error) {
	var sopts []sign.Option
	if a != nil {
		sopts = append(sopts, sign.WithAccess(a))
	}
	children, err := sign.Children(ctx, ref, l, sopts...)
	if err != nil {
		return nil, err
	}
	t := &Target{Index: ref, Platform: host}
	found := false
	for _, c := range children {
		if c.Platform != host {
			t.Others = append(t.Others, PlatformStatus{Platform: c.Platform, Digest: c.Ref.DigestStr(), Status: PlatformNotVerified})
			continue
		}
		view, err := l.ForPlatform(c.Platform)
		if err != nil {
			return nil, err
		}
		t.Image, t.Lock, found = c.Ref, view, true
	}
	if !found {
		return nil, fmt.Errorf("verify: %s has no image for this host's platform %s (its platforms: %s); run verify on a %s GPU host", ref, host, strings.Join(l.PlatformNames(), ", "), strings.Join(l.PlatformNames(), " or "))
	}
	return t, nil
}

// WithTarget verifies the host platform's image of a multi-platform
// build: the result is bound to t.Image (WithImage) and lists every
// platform, the others as not verified. Run is then given t.Lock. The
// default is a single-platform image.
func WithTarget(t *Target) Option {
	return func(o *options) error {
		if t == nil || t.Lock == nil {
			return fmt.Errorf("verify: empty platform target")
		}
		img := t.Image
		o.image, o.target = &img, t
		return nil
	}
}

// Subject is what verify runs for an image built from a lock, on this
// host.
type Subject struct {
	// Image and Lock are what the checks run against: the image and its
	// lock, or, for an image index (a lock with several platforms), this
	// host's platform's image and that platform's view of the lock.
	Image name.Digest
	Lock  *lock.Lock
	// Target is set for an image index (ForHost), nil for one image.
	Target *Target
}

// Options bind the result to the subject: WithTarget for an image index,
// WithImage otherwise.
func (s Subject) Options() []Option {
	if s.Target != nil {
		return []Option{WithTarget(s.Target)}
	}
	return []Option{WithImage(s.Image)}
}

// SubjectOf is the Subject of ref built from l on this host
// (HostPlatform): ref itself when l has no platforms, else the host
// platform's image in the index ref (ForHost, reading the index with a).
func SubjectOf(ctx context.Context, ref name.Digest, l *lock.Lock, a *auth.Access) (Subject, error) {
	if len(l.Platforms) == 0 {
		return Subject{Image: ref, Lock: l}, nil
	}
	t, err := ForHost(ctx, ref, l, HostPlatform(), a)
	if err != nil {
		return Subject{}, err
	}
	return Subject{Image: t.Image, Lock: t.Lock, Target: t}, nil
}
