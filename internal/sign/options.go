// Package sign writes and checks cosign signatures and in-toto attestations
// on image digests, with cosign's tag scheme (sha256-<hex>.sig and .att), so
// that the stock cosign CLI verifies what it writes:
//
//	cosign verify --key cosign.pub --insecure-ignore-tlog REPO@DIGEST
//	cosign verify-attestation --key cosign.pub --insecure-ignore-tlog --type URL REPO@DIGEST
//
// Private keys are cosign's encrypted key files or a KMS URI. Passwords are
// never logged and never part of an error.
package sign

import (
	"errors"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"imagectl/internal/auth"
)

// Option configures Sign, Attest and the Verify functions.
type Option func(*options) error

type options struct {
	sv       signature.SignerVerifier
	keyPath  string
	password []byte
	kmsURI   string
	offline  bool
	access   *auth.Access
	remote   []remote.Option
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{offline: true, access: auth.Default()}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithKey signs with a cosign-format encrypted private key file (as written
// by `cosign generate-key-pair` or GenerateKeyPair) and its password.
// The default is no key: Sign and Attest fail unless WithKey or WithKMS is
// given. Verify functions ignore it.
func WithKey(path string, password []byte) Option {
	return func(o *options) error {
		if path == "" {
			return errors.New("signing key path is empty")
		}
		o.keyPath = path
		o.password = password
		return nil
	}
}

// WithKMS signs with a key held by a KMS, addressed by a sigstore KMS URI
// (awskms://, gcpkms://, azurekms://, hashivault://). Only providers
// compiled into this binary work; others fail with an error naming the URI
// scheme. The default is no KMS.
func WithKMS(uri string) Option {
	return func(o *options) error {
		if uri == "" {
			return errors.New("KMS URI is empty")
		}
		o.kmsURI = uri
		return nil
	}
}

// WithOffline selects offline signing: nothing is uploaded to a
// transparency log, and verification ignores the log (the equivalent of
// cosign's --tlog-upload=false and --insecure-ignore-tlog). The default is
// true: imagectl targets air-gapped platforms. false is refused, because
// this build carries no transparency-log client.
func WithOffline(offline bool) Option {
	return func(o *options) error {
		if !offline {
			return ErrTlogUnsupported
		}
		o.offline = offline
		return nil
	}
}

// WithAccess sets the registry credentials and TLS trust: its keychain and
// transport extend cosign's registry options (ociremote's default is the
// same default keychain), and a 401/403 becomes an *auth.Error (exit 77).
// The default is auth.Default(): the Docker config and the system trust
// store.
func WithAccess(a *auth.Access) Option {
	return func(o *options) error { return auth.SetAccess(&o.access, a) }
}

// WithRemoteOptions passes further options (transport, user agent) to
// every registry call, after WithAccess's keychain and transport, which
// they override. The default is none.
func WithRemoteOptions(opts ...remote.Option) Option {
	return func(o *options) error {
		o.remote = append(o.remote, opts...)
		return nil
	}
}

// WithSigner signs with an already opened signer (for example one loaded
// once for several calls with LoadSigner). It takes precedence over WithKey
// and WithKMS. The default is none.
func WithSigner(sv signature.SignerVerifier) Option {
	return func(o *options) error {
		if sv == nil {
			return errors.New("signer is nil")
		}
		o.sv = sv
		return nil
	}
}

// ErrTlogUnsupported is returned by WithOffline(false).
var ErrTlogUnsupported = errors.New("transparency log upload is not supported by this build: sign offline (the default) and verify with --insecure-ignore-tlog")

// Offline reports whether opts select offline signing, so that callers can
// state it in their output.
func Offline(opts ...Option) bool {
	o, err := makeOptions(opts...)
	return err == nil && o.offline
}
