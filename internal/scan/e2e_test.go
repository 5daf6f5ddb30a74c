package scan_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/scan"
	"imagectl/internal/scan/report"
	"imagectl/internal/scan/scantest"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
)

const e2ePassword = "scan-e2e-password"

// signedDemo pushes an image shaped like the demo build (sbomtest, from
// demoLock) to the real registry and signs it with the sign stage, which
// reads its layers and attests its CycloneDX SBOM. It returns the digest
// and the key pair.
func signedDemo(t *testing.T, env testenv.Env, repo string) (ref name.Digest, priv, pub string) {
	t.Helper()
	var err error
	l := demoLock()
	l.Normalize()
	if l.Digest, err = l.ContentDigest(); err != nil {
		t.Fatal(err)
	}
	img, err := sbomtest.Image(l)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(env.Registry + "/" + repo + ":build")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	ref = tag.Context().Digest(h.String())
	priv, pub, err = sign.GenerateKeyPair(t.TempDir(), []byte(e2ePassword))
	if err != nil {
		t.Fatal(err)
	}
	if err := sign.SignAndAttest(context.Background(), ref, l, sign.Builder{}, sign.WithKey(priv, []byte(e2ePassword))); err != nil {
		t.Fatalf("SignAndAttest = %v", err)
	}
	return ref, priv, pub
}

// TestE2EScanAttestCosign: against the real registry, the scan reads the
// image's signed CycloneDX SBOM, finds the jq and pip records, and its
// vuln attestation verifies with stock cosign verify-attestation --type
// vuln, carrying the findings; Latest reads it back. An SBOM signed by
// another key is refused before any matching.
func TestE2EScanAttestCosign(t *testing.T) {
	env := testenv.Get(t)
	ctx := context.Background()
	ref, priv, pub := signedDemo(t, env, "imagectl/scan-e2e/demo")
	db := openDB(t, scantest.BuildDB(t, time.Time{}))

	r, err := scan.Image(ctx, ref, pub, db)
	if err != nil {
		t.Fatalf("Image = %v", err)
	}
	got := byID(r)
	for _, id := range []string{"CVE-2026-32316", "GHSA-4xh5-x5gv-qwph"} {
		if _, ok := got[id]; !ok {
			t.Errorf("scan of %s lacks %s: %+v", ref, id, r.Findings)
		}
	}
	if r.Image != ref.String() {
		t.Errorf("Image = %q, want %q", r.Image, ref)
	}

	_, otherPub, _ := sign.GenerateKeyPair(t.TempDir(), []byte(e2ePassword))
	var none *sign.NoAttestationError
	if _, err := scan.Image(ctx, ref, otherPub, db); !errors.As(err, &none) {
		t.Errorf("Image with another key = %v, want a *sign.NoAttestationError", err)
	}

	if err := scan.Attest(ctx, ref, r, sign.WithKey(priv, []byte(e2ePassword))); err != nil {
		t.Fatalf("Attest = %v", err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(env.Bin, "cosign"), "verify-attestation", "--key", pub,
		"--insecure-ignore-tlog", "--allow-insecure-registry", "--type", "vuln", ref.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cosign verify-attestation --type vuln %s: %v\n%s", ref, err, out)
	}
	var env2 struct{ Payload string }
	line, _, _ := strings.Cut(string(out), "\n")
	if err := json.Unmarshal([]byte(line), &env2); err != nil {
		t.Fatalf("cosign output: %v\n%s", err, out)
	}
	if env2.Payload == "" {
		t.Fatalf("cosign printed no DSSE payload:\n%s", out)
	}
	latest, err := report.Latest(ctx, ref, pub)
	if err != nil {
		t.Fatalf("Latest = %v", err)
	}
	if len(latest.Findings) != len(r.Findings) || latest.DB.Digest != db.Digest {
		t.Errorf("Latest = %d findings db %s, want %d db %s", len(latest.Findings), latest.DB.Digest, len(r.Findings), db.Digest)
	}
	if _, err := report.Latest(ctx, ref, otherPub); !errors.As(err, &none) {
		t.Errorf("Latest with another key = %v, want a *sign.NoAttestationError", err)
	}
}

// TestE2EDBArtifact: the database pushed to the real registry as an OCI
// artifact opens by tag, is recorded by digest, and a stale one is
// refused naming its build date.
func TestE2EDBArtifact(t *testing.T) {
	env := testenv.Get(t)
	ctx := context.Background()
	archive := scantest.Archive(t, scantest.BuildDB(t, time.Time{}, scantest.JQ))
	ref, err := name.ParseReference(env.Registry + "/imagectl/scan-e2e/grype-db:latest")
	if err != nil {
		t.Fatal(err)
	}
	d, err := scan.PushDB(ctx, archive, ref)
	if err != nil {
		t.Fatalf("PushDB = %v", err)
	}
	db := openDB(t, ref.String())
	if want := ref.Context().Digest(d.String()).String(); db.Source != want {
		t.Errorf("Source = %q, want %q", db.Source, want)
	}

	stale := scantest.BuildDB(t, time.Now().Add(-10*24*time.Hour), scantest.JQ)
	if _, err := scan.PushDB(ctx, scantest.Archive(t, stale), ref); err != nil {
		t.Fatal(err)
	}
	_, err = scan.OpenDB(ctx, ref.String(), scan.WithCacheDir(t.TempDir()))
	var se *scan.StaleDBError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "120h") {
		t.Errorf("OpenDB(stale artifact) = %v, want a *StaleDBError naming the limit", err)
	}
}
