package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/verify"
)

// run executes imagectl with args and returns stdout, stderr and the exit
// code main would use.
func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	root := New()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		errb.WriteString("imagectl: " + err.Error() + "\n")
	}
	return out.String(), errb.String(), exitcode.Code(err)
}

// TestSignPromotePinCLI drives sign, promote, releases and pin through the
// CLI against ggcr's in-process registry.
func TestSignPromotePinCLI(t *testing.T) {
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer s.Close()
	reg := strings.TrimPrefix(s.URL, "http://")
	dir := t.TempDir()
	const pw = "cli-test-password\n"
	t.Setenv("IMAGECTL_SIGNING_PASSWORD", "")
	t.Setenv("COSIGN_PASSWORD", "")
	os.Unsetenv("IMAGECTL_SIGNING_PASSWORD")
	os.Unsetenv("COSIGN_PASSWORD")

	keys := filepath.Join(dir, "keys")
	if _, _, code := run(t, "", "sign", "generate-key-pair", "--dir", keys); code != exitcode.Usage {
		t.Errorf("generate-key-pair without a password: exit %d, want %d", code, exitcode.Usage)
	}
	if out, errs, code := run(t, pw, "sign", "generate-key-pair", "--dir", keys, "--password-stdin"); code != 0 || strings.TrimSpace(out) != filepath.Join(keys, "cosign.pub") {
		t.Fatalf("generate-key-pair = %q, %q, %d", out, errs, code)
	}
	vkeys := filepath.Join(dir, "vkeys")
	if _, errs, code := run(t, pw, "sign", "generate-key-pair", "--dir", vkeys, "--password-stdin"); code != 0 {
		t.Fatalf("generate-key-pair = %q, %d", errs, code)
	}

	l := &lock.Lock{SchemaVersion: 1, Name: "demo", Core: lock.Core{Python: "3.11", Torch: "2.6.0"}}
	img, err := sbomtest.Image(l) // shaped like a build of l: sign reads its packages
	if err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	ref, _ := name.NewDigest(reg + "/staging/demo@" + h.String())
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	imgDir := filepath.Join(dir, "images", "demo")
	lockPath := filepath.Join(imgDir, "lock.json")
	if err := lock.Write(lockPath, l); err != nil {
		t.Fatal(err)
	}

	if _, _, code := run(t, pw, "sign", reg+"/staging/demo:latest", "--key", filepath.Join(keys, "cosign.key"), "--password-stdin"); code != exitcode.Usage {
		t.Errorf("sign by tag: exit %d, want %d", code, exitcode.Usage)
	}
	out, errs, code := run(t, pw, "sign", ref.String(), "--key", filepath.Join(keys, "cosign.key"), "--password-stdin", "--lock", lockPath, "--buildkit-version", "v0.34.2")
	if code != 0 || strings.TrimSpace(out) != ref.String() || !strings.Contains(errs, "offline") {
		t.Fatalf("sign = %q, %q, %d", out, errs, code)
	}
	if strings.Contains(errs, strings.TrimSpace(pw)) {
		t.Errorf("sign printed the password")
	}
	vres := verify.Result{Image: ref.String(), Digest: ref.DigestStr(), LockDigest: l.Digest, Passed: true}
	res, _ := json.Marshal(vres)
	resPath := filepath.Join(dir, "result.json")
	os.WriteFile(resPath, res, 0o644)
	if _, errs, code := run(t, pw, "sign", ref.String(), "--key", filepath.Join(vkeys, "cosign.key"), "--password-stdin", "--type", verify.PredicateType, "--predicate", resPath); code != 0 {
		t.Fatalf("attest verification = %q, %d", errs, code)
	}
	// The same result as the in-toto test result (verify.Attest writes both).
	tr, err := vres.TestResult()
	if err != nil {
		t.Fatal(err)
	}
	trPath := filepath.Join(dir, "test-result.json")
	os.WriteFile(trPath, tr, 0o644)
	if _, errs, code := run(t, pw, "sign", ref.String(), "--key", filepath.Join(vkeys, "cosign.key"), "--password-stdin", "--type", verify.TestResultPredicateType, "--predicate", trPath); code != 0 {
		t.Fatalf("attest test result = %q, %d", errs, code)
	}

	release := reg + "/ml/demo"
	if err := releasefile.Record(filepath.Join(imgDir, releasefile.FileName), "demo", release, releasefile.Release{Source: ref.String(), Month: "2026-12", Tags: []string{"1.0-2026.12"}}, "1.0"); err != nil {
		t.Fatal(err)
	}
	trust := []string{"--images", filepath.Join(dir, "images"), "--key", filepath.Join(keys, "cosign.pub"), "--verifier-key", filepath.Join(vkeys, "cosign.pub")}

	// pin before promotion: the tag does not exist.
	if _, _, code := run(t, "", append([]string{"pin", "demo:1.0"}, trust...)...); code == 0 {
		t.Errorf("pin before promotion: exit 0")
	}
	// dry run, then confirm, then nothing to do.
	_, errs, code = run(t, "", append([]string{"promote", "demo"}, trust...)...)
	if code != 0 || !strings.Contains(errs, "dry run: 5 action(s)") {
		t.Fatalf("promote (dry run) = %q, %d", errs, code)
	}
	out, errs, code = run(t, "", append([]string{"promote", "demo", "--confirm", "-o", "json"}, trust...)...)
	var results []promote.Result
	if code != 0 || json.Unmarshal([]byte(out), &results) != nil || len(results) != 1 || len(results[0].Actions) != 5 || !results[0].Actions[4].Done {
		t.Fatalf("promote --confirm = %q, %q, %d", out, errs, code)
	}
	_, errs, code = run(t, "", append([]string{"promote", filepath.Join(dir, "images"), "--confirm"}, trust...)...)
	if code != 0 || !strings.Contains(errs, "is in sync") {
		t.Errorf("promote again = %q, %d; want in sync", errs, code)
	}

	out, errs, code = run(t, "", append([]string{"pin", "demo:1.0"}, trust...)...)
	if code != 0 || strings.TrimSpace(out) != release+"@"+ref.DigestStr() {
		t.Errorf("pin = %q, %q, %d; want %s@%s", out, errs, code, release, ref.DigestStr())
	}
	out, _, code = run(t, "", append([]string{"pin", release + ":1.0-2026.12", "-o", "json"}, trust...)...)
	var p promote.Pinned
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Lock.Digest != l.Digest || p.Lock.Torch != "2.6.0" {
		t.Errorf("pin -o json = %q, %d", out, code)
	}
	// pin with the verifier key swapped for the signer's: refused by a gate.
	_, errs, code = run(t, "", "pin", "demo:1.0", "--images", filepath.Join(dir, "images"), "--key", filepath.Join(keys, "cosign.pub"), "--verifier-key", filepath.Join(keys, "cosign.pub"))
	if code != exitcode.PromotionRefused || !strings.Contains(errs, "gate verification") {
		t.Errorf("pin with an untrusted verifier = %q, %d; want exit 5 naming the gate", errs, code)
	}

	out, _, code = run(t, "", "releases", "demo", "--images", filepath.Join(dir, "images"))
	if code != 0 || !strings.Contains(out, "1.0-2026.12") || !strings.Contains(out, "moving") || !strings.Contains(out, ref.DigestStr()) {
		t.Errorf("releases = %q, %d", out, code)
	}
}
