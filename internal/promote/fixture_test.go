package promote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/signature"

	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/sign"
	"imagectl/internal/verify"
)

const password = "fixture-password-7f3a"

// fixture is a staging repository with keys, a lock in "git" (a temp dir)
// and helpers to sign, attest and promote.
type fixture struct {
	t       testing.TB
	ctx     context.Context
	reg     string
	dir     string // images/<name>
	lock    *lock.Lock
	staging string
	release string
	signer  keys
	ver     keys
	other   keys
}

type keys struct {
	priv, pub string
	sv        signature.SignerVerifier // the private key, decrypted once
}

func (k keys) opt() sign.Option { return sign.WithSigner(k.sv) }

var cachedKeys []keys

func newKeys(t testing.TB, n int) []keys {
	t.Helper()
	for len(cachedKeys) < n {
		dir, err := mkdirTemp()
		if err != nil {
			t.Fatal(err)
		}
		priv, pub, err := sign.GenerateKeyPair(dir, []byte(password))
		if err != nil {
			t.Fatal(err)
		}
		sv, err := sign.LoadSigner(context.Background(), sign.WithKey(priv, []byte(password)))
		if err != nil {
			t.Fatal(err)
		}
		cachedKeys = append(cachedKeys, keys{priv, pub, sv})
	}
	return cachedKeys[:n]
}

func newInProcessRegistry(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func newFixture(t testing.TB, reg string) *fixture {
	t.Helper()
	ks := newKeys(t, 3)
	f := &fixture{
		t: t, ctx: context.Background(), reg: reg,
		dir:     filepath.Join(t.TempDir(), "images", "pytorch-2.6-cu124"),
		staging: reg + "/staging/pytorch",
		release: reg + "/ml/pytorch",
		signer:  ks[0], ver: ks[1], other: ks[2],
	}
	f.lock = testLock()
	if err := lock.Write(filepath.Join(f.dir, lock.FileName), f.lock); err != nil {
		t.Fatal(err)
	}
	return f
}

func testLock() *lock.Lock {
	return &lock.Lock{
		SchemaVersion:   lock.SchemaVersion,
		Name:            "pytorch-2.6-cu124",
		Spec:            lock.Source{Path: "specs/pytorch.hcl", InputsDigest: "sha256:" + strings.Repeat("a", 64)},
		SourceDateEpoch: 1764460800,
		Core:            lock.Core{CUDA: "12.4", Torch: "2.6.0", TorchVariant: "cu124", Python: "3.11"},
		Base:            lock.Base{Ref: "example/debian:bookworm", ManifestDigest: "sha256:" + strings.Repeat("b", 64)},
		Pip:             []lock.Wheel{{Name: "numpy", Version: "1.26.4", Filename: "numpy.whl", URL: "http://index/numpy.whl", SHA256: strings.Repeat("d", 64)}},
	}
}

// push writes a random image to staging and returns its digest.
func (f *fixture) push(layers int64) name.Digest {
	f.t.Helper()
	img, err := random.Image(2048, layers)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.pushImage(img)
}

// pushImage writes img to staging by digest.
func (f *fixture) pushImage(img v1.Image) name.Digest {
	f.t.Helper()
	h, _ := img.Digest()
	d, err := name.NewDigest(f.staging + "@" + h.String())
	if err != nil {
		f.t.Fatal(err)
	}
	if err := remote.Write(d, img); err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) sign(d name.Digest, k keys) {
	f.t.Helper()
	if err := sign.Sign(f.ctx, d, k.opt()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) attestLock(d name.Digest, l *lock.Lock, k keys) {
	f.t.Helper()
	p, err := sign.LockPredicate(l)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := sign.Attest(f.ctx, d, sign.LockPredicateType, p, k.opt()); err != nil {
		f.t.Fatal(err)
	}
}

// attestVerification writes what verify.Attest writes, r as the
// verification and as the in-toto test result, signed by k (without
// verify.Attest's refusal of a result no runtime proof binds to d).
func (f *fixture) attestVerification(d name.Digest, r verify.Result, k keys) {
	f.t.Helper()
	f.attestVerificationAs(d, r, k, verify.PredicateType, verify.TestResultPredicateType)
}

// attestVerificationAs writes r as the predicate types given only.
func (f *fixture) attestVerificationAs(d name.Digest, r verify.Result, k keys, types ...string) {
	f.t.Helper()
	for _, typ := range types {
		var b []byte
		var err error
		switch typ {
		case verify.PredicateType:
			b, err = json.Marshal(r)
		case verify.TestResultPredicateType:
			b, err = r.TestResult()
		default:
			f.t.Fatalf("attestVerificationAs(%s): not a verifier predicate", typ)
		}
		if err != nil {
			f.t.Fatal(err)
		}
		if err := sign.Attest(f.ctx, d, typ, b, k.opt()); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) passing(d name.Digest) verify.Result {
	return verify.Result{
		Image: d.String(), Digest: d.DigestStr(), LockDigest: f.lock.Digest, Runtime: "in-place", Passed: true,
		Checks:    []verify.Check{{Name: "torch.cuda", Status: verify.Pass}},
		StartedAt: time.Unix(1764460800, 0).UTC(), Duration: "1s",
	}
}

// attestBuild writes the build attestations other than the lock (the
// SBOMs, the provenance: every SigningKey one of sign.ReleaseAttestations)
// with small stand-in predicates, except the types in skip.
func (f *fixture) attestBuild(d name.Digest, k keys, skip ...string) {
	f.t.Helper()
	for _, a := range sign.Required(sign.SigningKey, false) {
		if a.PredicateType == sign.LockPredicateType || slices.Contains(skip, a.PredicateType) {
			continue
		}
		if err := sign.Attest(f.ctx, d, a.PredicateType, []byte(`{"fixture":"`+a.Name+`"}`), k.opt()); err != nil {
			f.t.Fatal(err)
		}
	}
}

// good pushes an image that passes every gate.
func (f *fixture) good() name.Digest {
	f.t.Helper()
	d := f.push(2)
	f.sign(d, f.signer)
	f.attestLock(d, f.lock, f.signer)
	f.attestBuild(d, f.signer)
	f.attestVerification(d, f.passing(d), f.ver)
	return d
}

// releaseFile writes releases.json with one release per source.
func (f *fixture) releaseFile(moving map[string]string, rels ...releasefile.Release) string {
	f.t.Helper()
	path := filepath.Join(f.dir, releasefile.FileName)
	file := &releasefile.File{SchemaVersion: releasefile.SchemaVersion, Image: f.lock.Name, Repository: f.release, Releases: rels, Moving: moving}
	if err := releasefile.WriteFile(path, file); err != nil {
		f.t.Fatal(err)
	}
	return path
}

func (f *fixture) opts(more ...promote.Option) []promote.Option {
	return append([]promote.Option{promote.WithTrustedKeys(f.signer.pub), promote.WithVerifierKeys(f.ver.pub)}, more...)
}

// state is every tag of the release repository with its digest, plus the
// manifests present by digest among want.
func (f *fixture) state(digests ...name.Digest) map[string]string {
	f.t.Helper()
	repo, _ := name.NewRepository(f.release)
	out := map[string]string{}
	tags, err := remote.List(repo)
	var te *transport.Error
	if err != nil && !(errors.As(err, &te) && te.StatusCode == http.StatusNotFound) {
		f.t.Fatalf("listing %s: %v", repo, err)
	}
	for _, t := range tags {
		d, err := remote.Head(repo.Tag(t))
		if err != nil {
			f.t.Fatal(err)
		}
		out["tag "+t] = d.Digest.String()
	}
	for _, d := range digests {
		if _, err := remote.Head(repo.Digest(d.DigestStr())); err == nil {
			out["manifest "+d.DigestStr()] = "present"
		}
	}
	return out
}
