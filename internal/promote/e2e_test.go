package promote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/promote"
	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

// e2eFixture is a fixture on the real registry, reached through a
// counting proxy, with repositories unique to this run.
func e2eFixture(t testing.TB, env testenv.Env) (*fixture, *countingProxy) {
	proxy := newCountingProxy(t, env.Registry)
	f := newFixture(t, proxy.addr)
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	f.staging = proxy.addr + "/e2e-" + run + "/staging/pytorch"
	f.release = proxy.addr + "/e2e-" + run + "/ml/pytorch"
	return f, proxy
}

// pushBig writes an image of n layers of size bytes each to staging.
func (f *fixture) pushBig(size, n int64) name.Digest {
	img, err := random.Image(size, n)
	if err != nil {
		f.t.Fatal(err)
	}
	h, _ := img.Digest()
	d, _ := name.NewDigest(f.staging + "@" + h.String())
	if err := remote.Write(d, img); err != nil {
		f.t.Fatal(err)
	}
	return d
}

func cosignCmd(t *testing.T, env testenv.Env, args ...string) (string, error) {
	t.Helper()
	cmd := env.Command(t, context.Background(), "cosign", args...)
	// No password, no tlog, no network: what an air-gapped user has.
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=", "IMAGECTL_SIGNING_PASSWORD=", "SIGSTORE_NO_CACHE=1", "TUF_ROOT="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCosignInterop: the stock cosign CLI accepts our signatures and
// attestations, and rejects them under another key.
func TestCosignInterop(t *testing.T) {
	env := testenv.Get(t)
	env.Tool(t, "cosign")
	f, _ := e2eFixture(t, env)
	// An image shaped like a build of the lock: the SBOM reads its packages.
	img, err := sbomtest.Image(f.lock)
	if err != nil {
		t.Fatal(err)
	}
	d := f.pushImage(img)
	if err := sign.SignAndAttest(f.ctx, d, f.lock, sign.Builder{BuildKitVersion: "v0.34.2", SourceCommit: "0123456789abcdef0123456789abcdef01234567"}, f.signer.opt()); err != nil {
		t.Fatal(err)
	}
	f.attestVerification(d, f.passing(d), f.ver)

	ok := [][]string{
		{"verify", "--key", f.signer.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", d.String()},
		{"verify-attestation", "--key", f.signer.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", sign.LockPredicateType, d.String()},
		{"verify-attestation", "--key", f.signer.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", "spdxjson", d.String()},
		{"verify-attestation", "--key", f.signer.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", "cyclonedx", d.String()},
		{"verify-attestation", "--key", f.signer.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", "slsaprovenance1", d.String()},
		{"verify-attestation", "--key", f.ver.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", verify.PredicateType, d.String()},
	}
	for _, args := range ok {
		out, err := cosignCmd(t, env, args...)
		if err != nil {
			t.Errorf("cosign %s = %v:\n%s", strings.Join(args, " "), err, out)
		}
	}
	// What cosign --type cyclonedx prints is our statement, whose
	// predicate reads as a CycloneDX BOM of this digest.
	out, err := cosignCmd(t, env, "verify-attestation", "--key", f.signer.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", "cyclonedx", d.String())
	if err != nil {
		t.Fatalf("cosign verify-attestation --type cyclonedx = %v:\n%s", err, out)
	}
	boms := 0
	for _, line := range strings.Split(out, "\n") {
		var env struct{ Payload []byte }
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &env) != nil {
			continue
		}
		var st struct {
			PredicateType string          `json:"predicateType"`
			Predicate     json.RawMessage `json:"predicate"`
		}
		if err := json.Unmarshal(env.Payload, &st); err != nil {
			t.Fatalf("cosign printed an envelope whose payload is not a statement: %v", err)
		}
		var bom cdx.BOM
		if err := cdx.NewBOMDecoder(bytes.NewReader(st.Predicate), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
			t.Fatalf("the %s predicate does not decode as CycloneDX: %v", st.PredicateType, err)
		}
		if err := sbomtest.ValidateCycloneDX(st.Predicate); err != nil {
			t.Errorf("the %s predicate cosign printed is not valid CycloneDX: %v", st.PredicateType, err)
		}
		if st.PredicateType != sign.CycloneDXPredicateType || bom.Metadata == nil || bom.Metadata.Component == nil ||
			bom.Metadata.Component.Version != d.DigestStr() || bom.Components == nil || len(*bom.Components) == 0 {
			t.Errorf("cosign --type cyclonedx printed a %s statement, BOM metadata %+v: want a CycloneDX BOM of %s with components", st.PredicateType, bom.Metadata, d.DigestStr())
		}
		boms++
	}
	if boms != 1 {
		t.Errorf("cosign verify-attestation --type cyclonedx printed %d attestations, want 1:\n%s", boms, out)
	}

	bad := [][]string{
		{"verify", "--key", f.other.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", d.String()},
		{"verify-attestation", "--key", f.other.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", sign.LockPredicateType, d.String()},
		{"verify-attestation", "--key", f.other.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", "cyclonedx", d.String()},
		{"verify-attestation", "--key", f.signer.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", verify.PredicateType, d.String()},
	}
	for _, args := range bad {
		if out, err := cosignCmd(t, env, args...); err == nil {
			t.Errorf("cosign %s = nil, want a failure:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestPromoteRealRegistry: a promotion within the real registry uploads
// no blob bytes (everything is mounted), copies signatures and
// attestations along, and the result verifies with cosign and reads with
// crane; a second run changes nothing.
func TestPromoteRealRegistry(t *testing.T) {
	env := testenv.Get(t)
	env.Tool(t, "cosign")
	env.Tool(t, "crane")
	f, proxy := e2eFixture(t, env)
	d := f.pushBig(1<<20, 3)
	f.sign(d, f.signer)
	f.attestLock(d, f.lock, f.signer)
	f.attestBuild(d, f.signer)
	f.attestVerification(d, f.passing(d), f.ver)
	path := f.releaseFile(map[string]string{"2.6-cu124": d.DigestStr()}, rel(d.String(), "2026-12", "2.6-cu124-2026.12"))

	proxy.reset()
	res, err := promote.Run(f.ctx, path, f.opts(promote.WithConfirm(true))...)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	t.Logf("promotion: %d actions, %d blob bytes uploaded, %d blobs mounted", len(res.Actions), proxy.uploaded.Load(), proxy.mounted.Load())
	if n := proxy.uploaded.Load(); n != 0 {
		t.Errorf("blob bytes uploaded = %d, want 0 (cross-repository mount)", n)
	}
	if proxy.mounted.Load() < 4 { // 3 layers + config of the image, plus the .sig/.att blobs
		t.Errorf("blobs mounted = %d, want at least 4", proxy.mounted.Load())
	}
	rd := f.release + "@" + d.DigestStr()
	if out, err := cosignCmd(t, env, "verify", "--key", f.signer.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", rd); err != nil {
		t.Errorf("cosign verify %s = %v:\n%s", rd, err, out)
	}
	if out, err := cosignCmd(t, env, "verify-attestation", "--key", f.ver.pub, "--insecure-ignore-tlog", "--allow-insecure-registry", "--type", verify.PredicateType, f.release+":2.6-cu124"); err != nil {
		t.Errorf("cosign verify-attestation on the release tag = %v:\n%s", err, out)
	}
	crane := func(args ...string) string {
		out, err := exec.Command(env.Tool(t, "crane"), append(args, "--insecure")...).CombinedOutput()
		if err != nil {
			t.Errorf("crane %s = %v:\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := crane("digest", f.release+":2.6-cu124-2026.12"); got != d.DigestStr() {
		t.Errorf("crane digest = %q, want %s", got, d.DigestStr())
	}
	crane("validate", "--remote", f.release+":2.6-cu124")

	proxy.reset()
	res, err = promote.Run(f.ctx, path, f.opts(promote.WithConfirm(true))...)
	if err != nil || len(res.Actions) != 0 {
		t.Errorf("second Run = %d actions, %v; want none", len(res.Actions), err)
	}
}
