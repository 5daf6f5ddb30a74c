// Package scan matches an image's packages against a vulnerability database
// with grype used as a library. The packages come from the image's own
// signed CycloneDX SBOM (the attestation the sign stage writes), verified
// with the signer's public key first, so the scan sees exactly what the
// build recorded: the base's dpkg packages, the locked debs and wheels.
//
// The database is grype's schema v6 database, read offline from a
// directory, a grype archive (the file `grype db import` takes) or an OCI
// artifact in the platform's registry; one older than the age limit is
// refused, never used.
package scan

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/scan/report"
)

// DefaultMaxDBAge is the oldest database a scan accepts by default: grype's
// own limit (5 days).
const DefaultMaxDBAge = report.DefaultMaxDBAge

// Option configures OpenDB, Image and Attest.
type Option func(*options) error

type options struct {
	access   *auth.Access
	remote   []remote.Option
	maxAge   time.Duration
	now      func() time.Time
	cacheDir string
	vex      []VEXSource
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{access: auth.Default(), maxAge: DefaultMaxDBAge, now: time.Now}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.cacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		o.cacheDir = filepath.Join(dir, "imagectl", "vulndb")
	}
	return o, nil
}

// WithAccess takes registry credentials and TLS trust from a, and makes a
// registry's 401/403 an *auth.Error (exit 77). The default is
// auth.Default(): the Docker config and the system store.
func WithAccess(a *auth.Access) Option {
	return func(o *options) error { return auth.SetAccess(&o.access, a) }
}

// WithRemoteOptions adds go-containerregistry options to the registry
// calls (the database artifact's pull). The default is none.
func WithRemoteOptions(opts ...remote.Option) Option {
	return func(o *options) error {
		o.remote = append(o.remote, opts...)
		return nil
	}
}

// WithMaxDBAge sets the oldest database build accepted. The default is
// DefaultMaxDBAge (120h); zero or less is an error.
func WithMaxDBAge(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return errors.New("the database age limit must be positive")
		}
		o.maxAge = d
		return nil
	}
}

// WithCacheDir sets where imported database archives are unpacked (one
// directory per archive digest, reused by a rerun). The default is
// $XDG_CACHE_HOME/imagectl/vulndb (os.UserCacheDir).
func WithCacheDir(dir string) Option {
	return func(o *options) error {
		o.cacheDir = dir
		return nil
	}
}

// WithVEX applies the OpenVEX documents to the findings: a finding a
// statement marks not_affected or fixed for the image is reported as
// suppressed. The default is none.
func WithVEX(docs ...VEXSource) Option {
	return func(o *options) error {
		o.vex = append(o.vex, docs...)
		return nil
	}
}

func (o *options) remoteOptions() []remote.Option {
	return append(o.access.RemoteOptions(), o.remote...)
}
