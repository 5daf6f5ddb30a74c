// Package policy renders the admission policies that make a cluster refuse
// any image of the release repositories that imagectl did not sign and
// verify: a sigstore policy-controller ClusterImagePolicy or a Kyverno
// ClusterPolicy, from the same public keys promotion trusts.
//
// Both require, on the digest a pod runs, a cosign signature by the signer
// key AND an in-toto test-result attestation (result.TestResultPredicateType)
// with result PASSED by the verifier key, whose subject is that digest
// (both engines verify attestations with cosign's in-toto subject check), and
// optionally a cosign vulnerability attestation (VulnPredicateType) by the
// signer key whose scan finished within a maximum age. Keys only: no Rekor,
// no Fulcio, no TUF, so the policies work in an air-gapped cluster.
//
// The objects are typed structs of this package (the engines' own Go types
// would move the main module's Kubernetes and sigstore versions); the
// end-to-end tests run the rendered YAML through the engines themselves
// (policy-controller's policy-tester and the Kyverno CLI, built into bin/ by
// hack/tools.sh).
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"imagectl/internal/spec"
	"imagectl/internal/verify/result"
)

// Format is the admission engine a policy is rendered for.
type Format string

const (
	// PolicyController is a sigstore policy-controller ClusterImagePolicy
	// (policy.sigstore.dev/v1beta1).
	PolicyController Format = "policy-controller"
	// Kyverno is a Kyverno ClusterPolicy (kyverno.io/v1) with verifyImages
	// rules.
	Kyverno Format = "kyverno"
)

// Formats are the formats Render accepts.
var Formats = []Format{PolicyController, Kyverno}

// VulnPredicateType is cosign's vulnerability scan predicate type (cosign
// attest --type vuln), the attestation WithVulnMaxAge requires.
const VulnPredicateType = "https://cosign.sigstore.dev/attestation/vuln/v1"

// DefaultName is the policy's metadata.name unless WithName sets one.
const DefaultName = "imagectl-release"

// ParseFormat returns the Format named s, or an error listing the formats.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown policy format %q: want policy-controller or kyverno", s)
}

// Option configures Render.
type Option func(*options) error

type options struct {
	name        string
	key         []byte // PEM
	verifierKey []byte // PEM
	vulnMaxAge  time.Duration
}

// WithName sets the policy's metadata.name, a DNS-1123 subdomain. The
// default is DefaultName.
func WithName(n string) Option {
	return func(o *options) error {
		if err := CheckName(n); err != nil {
			return err
		}
		o.name = n
		return nil
	}
}

// CheckName reports whether n can be a policy's metadata.name (a DNS-1123
// subdomain), so that a caller can refuse a bad name before reading keys.
func CheckName(n string) error {
	if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
		return fmt.Errorf("policy name %q: %s", n, strings.Join(errs, "; "))
	}
	return nil
}

// WithKeyFile reads the signer's public key (cosign.pub, PEM): the key
// whose signature, and vulnerability attestation, the policy requires.
// There is no default: Render refuses to run without one.
func WithKeyFile(path string) Option {
	return func(o *options) (err error) {
		o.key, err = readPublicKey("signer", path)
		return err
	}
}

// WithVerifierKeyFile reads the verifier's public key (PEM): the key whose
// passing test-result attestation the policy requires. There is no default:
// Render refuses to run without one.
func WithVerifierKeyFile(path string) Option {
	return func(o *options) (err error) {
		o.verifierKey, err = readPublicKey("verifier", path)
		return err
	}
}

// WithVulnMaxAge makes the policy also require a vulnerability attestation
// (VulnPredicateType) signed by the signer key whose scan finished at most
// d before admission (predicate.metadata.scanFinishedOn). The default is 0:
// no vulnerability attestation is required.
func WithVulnMaxAge(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("vulnerability scan max age %s is negative", d)
		}
		if d > 0 && d < time.Second {
			return fmt.Errorf("vulnerability scan max age %s: want at least 1s", d)
		}
		o.vulnMaxAge = d
		return nil
	}
}

// readPublicKey reads one PEM public key and returns it re-encoded in
// canonical PEM (one key, no trailing text).
func readPublicKey(role, path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("%s public key path is empty", role)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the %s public key: %w", role, err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("the %s public key %s: %w", role, path, err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		return nil, fmt.Errorf("the %s public key %s: %w", role, path, err)
	}
	return pem, nil
}

// ErrNoKey is Render's error without WithKeyFile or WithVerifierKeyFile.
var ErrNoKey = errors.New("an admission policy needs the signer's public key and the verifier's public key")

// Render returns the policy for f covering repos (at least one): YAML, one
// object, with a comment saying what it requires.
func Render(f Format, repos []name.Repository, opts ...Option) ([]byte, error) {
	o := &options{name: DefaultName}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.key == nil || o.verifierKey == nil {
		return nil, ErrNoKey
	}
	if len(repos) == 0 {
		return nil, errors.New("an admission policy needs at least one release repository")
	}
	var obj any
	switch f {
	case PolicyController:
		obj = clusterImagePolicy(repos, o)
	case Kyverno:
		obj = kyvernoPolicy(repos, o)
	default:
		_, err := ParseFormat(string(f))
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# %s rendered by `imagectl policy render --format %s`\n", kindOf(f), f)
	fmt.Fprintf(&buf, "# for the release repositories %s.\n", strings.Join(repoNames(repos), ", "))
	fmt.Fprintf(&buf, "# It admits an image only when its digest carries a cosign signature by the\n")
	fmt.Fprintf(&buf, "# signer key AND an in-toto test-result attestation with result PASSED by the\n")
	fmt.Fprintf(&buf, "# verifier key (%s)", result.TestResultPredicateType)
	if o.vulnMaxAge > 0 {
		fmt.Fprintf(&buf, "\n# AND a vulnerability attestation by the signer key whose scan finished within\n")
		fmt.Fprintf(&buf, "# %s (%s)", shortDuration(o.vulnMaxAge), VulnPredicateType)
	}
	fmt.Fprintf(&buf, ".\n# Public keys only: no transparency log, Fulcio or TUF.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("encoding the %s policy: %w", f, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding the %s policy: %w", f, err)
	}
	return buf.Bytes(), nil
}

func kindOf(f Format) string {
	if f == Kyverno {
		return "Kyverno ClusterPolicy"
	}
	return "sigstore policy-controller ClusterImagePolicy"
}

// ReleaseRepositories returns the release repositories (repos.release) of
// imgs, sorted, each once. An image without one, or with one that is not a
// repository, is an error naming the image and its file:line.
func ReleaseRepositories(imgs []spec.Image) ([]name.Repository, error) {
	var rs []string
	for _, img := range imgs {
		if img.Repos.Release == "" {
			return nil, fmt.Errorf("%s:%d: image %q has no repos.release: nothing to write an admission policy for", img.File, img.Line, img.Name)
		}
		rs = append(rs, img.Repos.Release)
	}
	repos, err := ParseRepositories(rs)
	if err != nil {
		for _, img := range imgs {
			if _, perr := name.NewRepository(img.Repos.Release); perr != nil {
				return nil, fmt.Errorf("%s:%d: image %q: repos.release: %w", img.File, img.Line, img.Name, err)
			}
		}
		return nil, err
	}
	return repos, nil
}

// ParseRepositories parses release repositories (registry/path, no tag or
// digest), sorted, each once.
func ParseRepositories(rs []string) ([]name.Repository, error) {
	seen := map[string]name.Repository{}
	for _, s := range rs {
		r, err := name.NewRepository(s)
		if err != nil {
			return nil, fmt.Errorf("release repository %q: %w", s, err)
		}
		seen[r.Name()] = r
	}
	var out []name.Repository
	for _, r := range seen {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func repoNames(repos []name.Repository) []string {
	var ns []string
	for _, r := range repos {
		ns = append(ns, r.Name())
	}
	return ns
}

// imagePatterns are the references of repo an engine matches: by digest
// (repo@sha256:...), by tag (repo:TAG) and bare (repo, the engines' implied
// :latest), never another repository that shares repo as a prefix. A '*'
// matches no '/' in policy-controller's globs; Kyverno's wildcard may, and a
// tag or digest holds none.
func imagePatterns(repo name.Repository) []string {
	return []string{repo.Name(), repo.Name() + "@*", repo.Name() + ":*"}
}

// shortDuration is d as Go writes it without zero minutes and seconds
// (168h0m0s -> 168h, 90m0s -> 1h30m); Kyverno and Go both parse it.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
