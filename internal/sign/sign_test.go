package sign_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"

	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/sign"
)

const testPassword = "correct-horse-battery-staple"

func newRegistry(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func pushRandom(t *testing.T, repo string) name.Digest {
	t.Helper()
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(repo + ":build")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(h.String())
}

// pushBuilt writes an image shaped like imagectl's build of l (sbomtest)
// to repo.
func pushBuilt(t *testing.T, repo string, l *lock.Lock) name.Digest {
	t.Helper()
	img, err := sbomtest.Image(l)
	if err != nil {
		t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d, err := name.NewDigest(repo + "@" + h.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(d, img); err != nil {
		t.Fatal(err)
	}
	return d
}

// testCommit is a full git commit hash, as the provenance wants it.
const testCommit = "0123456789abcdef0123456789abcdef01234567"

func keyPair(t *testing.T) (priv, pub string) {
	t.Helper()
	priv, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte(testPassword))
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func testLock() *lock.Lock {
	return &lock.Lock{
		SchemaVersion:   lock.SchemaVersion,
		Name:            "pytorch-2.6-cu124",
		Spec:            lock.Source{Path: "specs/pytorch.hcl", InputsDigest: "sha256:" + strings.Repeat("a", 64)},
		SourceDateEpoch: 1764460800,
		Core:            lock.Core{CUDA: "12.4", Torch: "2.6.0", TorchVariant: "cu124", Python: "3.11"},
		Base:            lock.Base{Ref: "example/debian:bookworm", ManifestDigest: "sha256:" + strings.Repeat("b", 64)},
		Apt:             []lock.Deb{{Name: "libgomp1", Version: "12.2.0-14", Arch: "amd64", URL: "http://mirror/pool/libgomp1.deb", SHA256: strings.Repeat("c", 64)}},
		Pip:             []lock.Wheel{{Name: "numpy", Version: "1.26.4", Filename: "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl", URL: "http://index/numpy.whl", SHA256: strings.Repeat("d", 64)}},
	}
}

func TestSignVerify(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t)
	ref := pushRandom(t, reg+"/staging/img")
	other := pushRandom(t, reg+"/staging/img")
	priv, pub := keyPair(t)
	_, wrongPub := keyPair(t)

	if err := sign.VerifySignature(ctx, ref, pub); err == nil || !sign.Unsigned(err) {
		t.Fatalf("VerifySignature(unsigned) = %v, want an unsigned error", err)
	}
	if err := sign.Sign(ctx, ref); !errors.Is(err, sign.ErrNoKey) {
		t.Fatalf("Sign without a key = %v, want ErrNoKey", err)
	}
	if err := sign.Sign(ctx, ref, sign.WithKey(priv, []byte("wrong"))); err == nil || strings.Contains(err.Error(), "wrong") && strings.Contains(err.Error(), testPassword) {
		t.Fatalf("Sign with a wrong password = %v, want an error", err)
	}
	for i := 0; i < 2; i++ { // the second signature is a duplicate: nothing added
		if err := sign.Sign(ctx, ref, sign.WithKey(priv, []byte(testPassword))); err != nil {
			t.Fatalf("Sign(%s) = %v", ref, err)
		}
	}
	if err := sign.VerifySignature(ctx, ref, pub); err != nil {
		t.Fatalf("VerifySignature(%s) = %v, want nil", ref, err)
	}
	if err := sign.VerifySignature(ctx, ref, wrongPub); err == nil {
		t.Fatalf("VerifySignature with another key = nil, want an error")
	}
	if err := sign.VerifySignature(ctx, other, pub); err == nil {
		t.Fatalf("VerifySignature(unsigned other digest) = nil, want an error")
	}
	if n := layers(t, ref, ".sig"); n != 1 {
		t.Errorf("signature layers after signing twice = %d, want 1", n)
	}
}

// attachmentTag is cosign's .sig or .att tag of ref, from cosign's ociremote.
func attachmentTag(t *testing.T, ref name.Digest, suffix string) name.Tag {
	t.Helper()
	tag, err := ociremote.SignatureTag(ref)
	if suffix == ".att" {
		tag, err = ociremote.AttestationTag(ref)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// layers counts the layers of the .sig or .att image of ref.
func layers(t *testing.T, ref name.Digest, suffix string) int {
	t.Helper()
	tag := attachmentTag(t, ref, suffix)
	img, err := remote.Image(tag)
	if err != nil {
		t.Fatalf("reading %s: %v", tag, err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	return len(ls)
}

func TestAttest(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t)
	l := testLock()
	if _, err := lock.Marshal(l); err != nil {
		t.Fatal(err)
	}
	ref := pushBuilt(t, reg+"/staging/img", l)
	other := pushRandom(t, reg+"/staging/img")
	priv, pub := keyPair(t)
	_, wrongPub := keyPair(t)
	key := sign.WithKey(priv, []byte(testPassword))

	if err := sign.SignAndAttest(ctx, ref, l, sign.Builder{BuildKitVersion: "v0.34.2", SourceCommit: testCommit}, key); err != nil {
		t.Fatalf("SignAndAttest = %v", err)
	}
	// The same statements again add nothing.
	if err := sign.SignAndAttest(ctx, ref, l, sign.Builder{BuildKitVersion: "v0.34.2", SourceCommit: testCommit}, key); err != nil {
		t.Fatalf("SignAndAttest again = %v", err)
	}
	if n := layers(t, ref, ".att"); n != 4 {
		t.Errorf("attestation layers = %d, want 4 (lock, SPDX, CycloneDX, provenance)", n)
	}
	preds, err := sign.VerifyAttestations(ctx, ref, sign.LockPredicateType, pub)
	if err != nil {
		t.Fatalf("VerifyAttestations(lock) = %v", err)
	}
	got, err := lock.Parse("attestation", preds[0])
	if err != nil {
		t.Fatalf("lock predicate does not parse as a lock: %v", err)
	}
	if got.Digest != l.Digest {
		t.Errorf("attested lock digest = %s, want %s", got.Digest, l.Digest)
	}
	sbom, err := sign.VerifyAttestations(ctx, ref, sign.SPDXPredicateType, pub)
	if err != nil {
		t.Fatalf("VerifyAttestations(spdx) = %v", err)
	}
	// The image's packages: the locked ones with the lock's hashes, and
	// the base's and the venv's.
	for _, want := range []string{`"numpy"`, `"1.26.4"`, strings.Repeat("d", 64), `"libgomp1"`, strings.Repeat("c", 64), `"SPDX-2.3"`,
		"pkg:deb/debian/bash@", "pkg:pypi/pip@", "pkg:generic/imagectl-init"} {
		if !bytes.Contains(sbom[0], []byte(want)) {
			t.Errorf("SPDX document lacks %s", want)
		}
	}
	// The CycloneDX BOM, as cyclonedx-go reads it: the same packages.
	cdxPreds, err := sign.VerifyAttestations(ctx, ref, sign.CycloneDXPredicateType, pub)
	if err != nil {
		t.Fatalf("VerifyAttestations(cyclonedx) = %v", err)
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(cdxPreds[0]), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("the CycloneDX predicate does not decode: %v", err)
	}
	if bom.SpecVersion != cdx.SpecVersion1_6 || bom.Metadata == nil || bom.Metadata.Component == nil ||
		bom.Metadata.Component.Version != ref.DigestStr() || bom.Components == nil {
		t.Fatalf("CycloneDX BOM = %s, metadata %+v: want 1.6 about %s with components", bom.SpecVersion, bom.Metadata, ref.DigestStr())
	}
	sums := map[string]string{}
	for _, c := range *bom.Components {
		if c.Hashes != nil {
			sums[c.PackageURL] = (*c.Hashes)[0].Value
		}
	}
	for purl, want := range map[string]string{
		"pkg:pypi/numpy@1.26.4": strings.Repeat("d", 64),
		"pkg:deb/debian/libgomp1@12.2.0-14?arch=amd64&distro=debian-12": strings.Repeat("c", 64),
	} {
		if got := sums[purl]; got != want {
			t.Errorf("CycloneDX component %s: sha256 %q, want the lock's %s", purl, got, want)
		}
	}
	prov, err := sign.VerifyAttestations(ctx, ref, sign.ProvenancePredicateType, pub)
	if err != nil {
		t.Fatalf("VerifyAttestations(provenance) = %v", err)
	}
	for _, want := range []string{"v0.34.2", testCommit, l.Digest, "specs/pytorch.hcl"} {
		if !bytes.Contains(prov[0], []byte(want)) {
			t.Errorf("provenance lacks %s: %s", want, prov[0])
		}
	}

	var nae *sign.NoAttestationError
	if _, err := sign.VerifyAttestations(ctx, ref, sign.LockPredicateType, wrongPub); !errors.As(err, &nae) {
		t.Errorf("VerifyAttestations with another key = %v, want NoAttestationError", err)
	}
	if _, err := sign.VerifyAttestations(ctx, ref, "https://example.com/none", pub); !errors.As(err, &nae) {
		t.Errorf("VerifyAttestations(unknown type) = %v, want NoAttestationError", err)
	}
	if _, err := sign.VerifyAttestations(ctx, other, sign.LockPredicateType, pub); !errors.As(err, &nae) {
		t.Errorf("VerifyAttestations(other digest) = %v, want NoAttestationError", err)
	}

	// A new predicate of the same type replaces the old one.
	if err := sign.Attest(ctx, ref, sign.LockPredicateType, []byte(`{"x":1}`), key); err != nil {
		t.Fatal(err)
	}
	preds, err = sign.VerifyAttestations(ctx, ref, sign.LockPredicateType, pub)
	if err != nil || len(preds) != 1 || string(preds[0]) != `{"x":1}` {
		t.Errorf("after replacing: VerifyAttestations = %q, %v; want the one new predicate", preds, err)
	}
}

// TestNoKeyMaterialInRegistry checks that no blob the signer wrote contains
// the private key file, its password or the raw key.
func TestNoKeyMaterialInRegistry(t *testing.T) {
	var logBuf bytes.Buffer
	ctx := logs.With(context.Background(), slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	reg := newRegistry(t)
	ref := pushBuilt(t, reg+"/staging/img", testLock())
	priv, _ := keyPair(t)
	privPEM, err := os.ReadFile(priv)
	if err != nil {
		t.Fatal(err)
	}
	key := sign.WithKey(priv, []byte(testPassword))
	if err := sign.SignAndAttest(ctx, ref, testLock(), sign.Builder{}, key); err != nil {
		t.Fatal(err)
	}
	secrets := secretsOf(t, privPEM)
	for _, suffix := range []string{".sig", ".att"} {
		tag := attachmentTag(t, ref, suffix)
		img, err := remote.Image(tag)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := img.RawManifest()
		cfg, _ := img.RawConfigFile()
		blobs := [][]byte{raw, cfg}
		ls, _ := img.Layers()
		for _, l := range ls {
			rc, err := l.Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			blobs = append(blobs, b)
		}
		for _, b := range blobs {
			for name, s := range secrets {
				if bytes.Contains(b, s) {
					t.Errorf("%s contains the %s", tag, name)
				}
			}
		}
	}
	if logBuf.Len() == 0 {
		t.Error("nothing was logged: the log check below would prove nothing")
	}
	for name, s := range secrets {
		if bytes.Contains(logBuf.Bytes(), s) {
			t.Errorf("the log contains the %s", name)
		}
	}
	// Errors do not carry the password either.
	err = sign.Sign(ctx, ref, sign.WithKey(priv, []byte(testPassword+"x")))
	if err == nil {
		t.Fatal("Sign with a wrong password succeeded")
	}
	for name, s := range secrets {
		if strings.Contains(err.Error(), string(s)) {
			t.Errorf("error %q contains the %s", err, name)
		}
	}
}

// secretsOf returns the byte strings that must never leave the key file.
func secretsOf(t *testing.T, privPEM []byte) map[string][]byte {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(privPEM)), "\n")
	body := strings.Join(lines[1:len(lines)-1], "")
	var enc struct {
		Ciphertext []byte `json:"ciphertext"`
	}
	// cosign's key body is base64 of a JSON envelope holding the ciphertext.
	return map[string][]byte{
		"password":              []byte(testPassword),
		"private key file body": []byte(body[:48]),
		"ciphertext (envelope)": mustCiphertext(t, body, &enc),
	}
}

func mustCiphertext(t *testing.T, body string, enc *struct {
	Ciphertext []byte `json:"ciphertext"`
}) []byte {
	t.Helper()
	raw, err := base64Decode(body)
	if err != nil {
		t.Fatalf("decoding key body: %v", err)
	}
	if err := json.Unmarshal(raw, enc); err != nil || len(enc.Ciphertext) < 32 {
		t.Fatalf("key body is not cosign's encrypted envelope: %v", err)
	}
	return enc.Ciphertext[:32]
}

func TestGenerateKeyPairRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := sign.GenerateKeyPair(dir, []byte("p")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sign.GenerateKeyPair(dir, []byte("p")); err == nil {
		t.Fatal("GenerateKeyPair over an existing key = nil, want an error")
	}
	st, err := os.Stat(filepath.Join(dir, sign.PrivateKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("private key mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
}

func TestOptions(t *testing.T) {
	ref, err := name.NewDigest("example.com/a@sha256:" + strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	if err := sign.Sign(context.Background(), ref, sign.WithOffline(false)); !errors.Is(err, sign.ErrTlogUnsupported) {
		t.Errorf("WithOffline(false) = %v, want ErrTlogUnsupported", err)
	}
	if !sign.Offline() {
		t.Error("Offline() = false, want the default true")
	}
}

func TestKMSUnsupportedIsClear(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t)
	ref := pushRandom(t, reg+"/staging/img")
	err := sign.Sign(ctx, ref, sign.WithKMS("awskms:///alias/none"))
	if err == nil || !strings.Contains(err.Error(), "awskms") {
		t.Fatalf("Sign with an uncompiled KMS provider = %v, want an error naming the URI", err)
	}
	t.Logf("KMS error: %v", err)
}
