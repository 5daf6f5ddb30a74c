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

// Platform statuses in Result.Platforms.
const (
	PlatformVerified    = "verified"
	PlatformFailed      = "failed"
	PlatformNotVerified = "not verified"
)

// PlatformStatus is one platform of a multi-platform image in a result.
type PlatformStatus struct {
	// Platform is "linux/arm64".
	Platform string `json:"platform"`
	// Digest is that platform's image inside the index.
	Digest string `json:"digest"`
	// Status is PlatformVerified or PlatformFailed for the platform that
	// ran, PlatformNotVerified for the others.
	Status string `json:"status"`
}

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
