package sign

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"

	"imagectl/internal/atomicfile"
)

// Key file names GenerateKeyPair writes, the same as cosign generate-key-pair.
const (
	PrivateKeyFile = "cosign.key"
	PublicKeyFile  = "cosign.pub"
)

// PasswordEnv and CosignPasswordEnv name the environment variables the CLI
// reads the private key password from, in this order.
const (
	PasswordEnv       = "IMAGECTL_SIGNING_PASSWORD"
	CosignPasswordEnv = "COSIGN_PASSWORD"
)

// PasswordFromEnv returns the key password from IMAGECTL_SIGNING_PASSWORD or
// COSIGN_PASSWORD, and whether either was set.
func PasswordFromEnv() ([]byte, bool) {
	for _, k := range []string{PasswordEnv, CosignPasswordEnv} {
		if v, ok := os.LookupEnv(k); ok {
			return []byte(v), true
		}
	}
	return nil, false
}

// VerifierPasswordEnv names the environment variable the CLI reads the
// verifier key's password from; without it, the signing key's password
// (PasswordFromEnv) is used for the verifier key too.
const VerifierPasswordEnv = "IMAGECTL_VERIFIER_PASSWORD"

// VerifierPasswordFromEnv returns the verifier key password from
// IMAGECTL_VERIFIER_PASSWORD, else PasswordFromEnv's, and whether any was
// set.
func VerifierPasswordFromEnv() ([]byte, bool) {
	if v, ok := os.LookupEnv(VerifierPasswordEnv); ok {
		return []byte(v), true
	}
	return PasswordFromEnv()
}

// CheckKeyPair opens the private key that opts select (WithKey, WithKMS
// or WithSigner) and checks that the public key in pubPath is its public
// half: a message signed by the one verifies under the other. It returns
// the open signer, so that a release can check both of its keys before its
// first build and sign with them after its last.
func CheckKeyPair(ctx context.Context, pubPath string, opts ...Option) (signature.SignerVerifier, error) {
	sv, err := LoadSigner(ctx, opts...)
	if err != nil {
		return nil, err
	}
	v, err := LoadPublicKey(pubPath)
	if err != nil {
		return nil, err
	}
	msg := []byte("imagectl key pair check")
	sig, err := sv.SignMessage(bytes.NewReader(msg), sigopts.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("signing with the key of %s: %w", pubPath, err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(msg)); err != nil {
		return nil, fmt.Errorf("the public key %s is not the public half of the signing key: %w", pubPath, err)
	}
	return sv, nil
}

// GenerateKeyPair writes a new ECDSA P-256 key pair into dir in cosign's
// format: cosign.key (encrypted with password, mode 0600) and cosign.pub.
// It refuses to overwrite an existing key.
func GenerateKeyPair(dir string, password []byte) (privPath, pubPath string, err error) {
	privPath = filepath.Join(dir, PrivateKeyFile)
	pubPath = filepath.Join(dir, PublicKeyFile)
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Stat(p); err == nil {
			return "", "", fmt.Errorf("generating key pair: %s exists; refusing to overwrite it", p)
		}
	}
	pw := append([]byte(nil), password...)
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return pw, nil })
	if err != nil {
		return "", "", fmt.Errorf("generating key pair: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("generating key pair: %w", err)
	}
	if err := atomicfile.Write(privPath, kb.PrivateBytes, 0o600); err != nil {
		return "", "", fmt.Errorf("writing private key: %w", err)
	}
	if err := atomicfile.Write(pubPath, kb.PublicBytes, 0o644); err != nil {
		return "", "", fmt.Errorf("writing public key: %w", err)
	}
	return privPath, pubPath, nil
}

// ErrNoKey is returned by Sign and Attest without WithKey or WithKMS.
var ErrNoKey = errors.New("no signing key: give a key file (WithKey) or a KMS URI (WithKMS)")

// LoadSigner opens the signer that opts select (WithKey, WithKMS or
// WithSigner), so that several Sign and Attest calls decrypt the key once.
func LoadSigner(ctx context.Context, opts ...Option) (signature.SignerVerifier, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return o.signer(ctx)
}

func (o *options) signer(ctx context.Context) (signature.SignerVerifier, error) {
	switch {
	case o.sv != nil:
		return o.sv, nil
	case o.keyPath != "" && o.kmsURI != "":
		return nil, errors.New("both a key file and a KMS URI were given: choose one")
	case o.keyPath != "":
		b, err := os.ReadFile(o.keyPath)
		if err != nil {
			return nil, fmt.Errorf("reading signing key: %w", err)
		}
		sv, err := cosign.LoadPrivateKey(b, o.password, nil)
		if err != nil {
			// cosign's message names the failing step (decrypt, parse) and
			// holds neither the key nor the password.
			return nil, fmt.Errorf("loading signing key %s (wrong password?): %w", o.keyPath, err)
		}
		return sv, nil
	case o.kmsURI != "":
		sv, err := kms.Get(ctx, o.kmsURI, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("opening KMS key %q (supported here: %v): %w", o.kmsURI, kms.SupportedProviders(), err)
		}
		return sv, nil
	}
	return nil, ErrNoKey
}

// LoadPublicKey reads a PEM public key (cosign.pub) as a verifier.
func LoadPublicKey(path string) (signature.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading public key: %w", err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("parsing public key %s: %w", path, err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("loading public key %s: %w", path, err)
	}
	return v, nil
}
