package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/scan"
	"imagectl/internal/scan/report"
	"imagectl/internal/scan/scantest"
	"imagectl/internal/sign"
)

// scanRelease is the demo spec with a vulnerabilities policy, released
// through bin/imagectl against the real daemons.
type scanRelease struct {
	dr     *demoRelease
	bin    string
	spec   string
	images string
}

// imagectl runs bin/imagectl with args and returns stdout, stderr and the
// exit code.
func (s *scanRelease) imagectl(t *testing.T, ctx context.Context, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = append(os.Environ(), sign.CosignPasswordEnv+"="+string(e2ePassword))
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("imagectl %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

func (s *scanRelease) release(t *testing.T, ctx context.Context, db string) (string, string, int) {
	t.Helper()
	env := s.dr.env
	return s.imagectl(t, ctx, "release", s.spec, "--images-dir", s.images, "--lock-missing",
		"--addr", env.BuildkitHost, "--init", filepath.Join(env.Bin, "imagectl-init"),
		"--key", s.dr.keys.signKey, "--verifier-key", s.dr.keys.verKey,
		"--verify-runtime", "containerd", "--containerd-address", env.Containerd, "--require-container-runtime",
		"--month", "2026-12", "--progress", "quiet", "-o", "json", "--db", db,
		"--var", "registry="+env.Registry, "--var", "wheel_index="+s.dr.index.URL)
}

// TestReleaseScanCLIEndToEnd drives issue 23's done-when list through
// bin/imagectl on the demo release (real buildkitd, registry, containerd)
// with a spec whose policy is vulnerabilities { max_severity = "medium",
// fixable_only = true } and a test database built with grype's builder
// holding Debian's jq record:
//   - release --db scans and attests the image, and the fixture CVE refuses
//     promotion with exit 5 naming the CVE, the package and the fix version;
//   - images/demo/vex.json marking it not_affected lets the rerun through,
//     and scan --vex reports it suppressed;
//   - a database built 10 days ago is refused (exit 1, naming its build
//     date and the limit), by release and by scan;
//   - stock cosign verify-attestation --type vuln verifies the promoted
//     digest's scan;
//   - scan releases with a second database that adds pip's
//     GHSA-4xh5-x5gv-qwph (medium, fixed in 25.3) finds it new on the
//     promoted digest and exits 5; the rerun finds nothing new and exits 0.
func TestReleaseScanCLIEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dr := newDemoRelease(t, ctx, "e2e-scan", 1<<20)
	s := &scanRelease{dr: dr, bin: filepath.Join(dr.env.Bin, "imagectl"), images: dr.images}
	if _, err := os.Stat(s.bin); err != nil {
		t.Fatalf("%s: %v (make build)", s.bin, err)
	}
	// The base's sources include bookworm-security, whose jq is
	// 1.6-2.1+deb12u3: the fixed version, so the unpinned demo would
	// resolve it and the fixture record would not apply. The spec pins jq
	// (and libjq1, which jq depends on at the same version) to bookworm's
	// own 1.6-2.1+deb12u2 (scanJQ).
	s.spec = writeScanSpec(t, dr, `
  policy {
    vulnerabilities {
      max_severity = "medium"
      fixable_only = true
    }
  }
`)
	db1 := scantest.BuildDB(t, time.Time{}, scantest.JQ)
	db2 := scantest.BuildDB(t, time.Time{}, scantest.JQ, scantest.PipTar)
	stale := scantest.BuildDB(t, time.Now().Add(-10*24*time.Hour), scantest.JQ)

	// The fixture's jq record must apply to what the demo image installs.
	_, errs, code := s.release(t, ctx, db1)
	l, err := lock.Read(lock.Path(s.images, "demo"))
	if err != nil {
		t.Fatalf("release wrote no lock (exit %d): %v\n%s", code, err, errs)
	}
	jq := ""
	for _, d := range l.Apt {
		if d.Name == "jq" {
			jq = d.Version
		}
	}
	if jq != scanJQ {
		t.Fatalf("the demo lock has jq %q: the fixture record CVE-2026-32316 (fixed in 1.6-2.1+deb12u3) does not apply", jq)
	}

	// 1. Scanned, attested, refused: exit 5 naming the CVE, package and fix.
	if code != exitcode.PromotionRefused {
		t.Fatalf("release with the jq CVE: exit %d, want %d\n%s", code, exitcode.PromotionRefused, errs)
	}
	for _, want := range []string{"gate vulnerabilities", "CVE-2026-32316 (high) in jq " + jq, "fixed in 1.6-2.1+deb12u3"} {
		if !strings.Contains(errs, want) {
			t.Errorf("release refusal does not say %q:\n%s", want, errs)
		}
	}
	rf := filepath.Join(s.images, "demo", "releases.json")
	if _, err := os.Stat(rf); err == nil {
		t.Errorf("a refused release wrote %s", rf)
	}

	// A stale database refuses the release before any scan (exit 1).
	if _, errs, code := s.release(t, ctx, stale); code != exitcode.Failure || !strings.Contains(errs, "older than the limit") {
		t.Errorf("release with a 10-day-old database: exit %d, want %d and the stale-database error:\n%s", code, exitcode.Failure, errs)
	}

	// 2. VEX lets it through; the report says suppressed.
	vex := `{"@context": "https://openvex.dev/ns/v0.2.0", "@id": "https://platform.example/vex/demo", "author": "platform team",
 "timestamp": "2026-12-01T00:00:00Z", "version": 1,
 "statements": [{"vulnerability": {"name": "CVE-2026-32316"}, "products": [{"@id": "pkg:oci/demo", "subcomponents": [{"@id": "pkg:deb/debian/jq"}]}],
   "status": "not_affected", "justification": "vulnerable_code_not_in_execute_path",
   "impact_statement": "the demo never feeds jq untrusted input"}]}`
	vexPath := filepath.Join(s.images, "demo", scan.VEXFile)
	if err := os.WriteFile(vexPath, []byte(vex), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := s.release(t, ctx, db1)
	var rows []struct {
		Ref       string   `json:"ref"`
		Reference string   `json:"reference"`
		Resumed   []string `json:"resumed"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].Reference == "" {
		t.Fatalf("release with the VEX statement: exit %d\n%s\n%s", code, out, errs)
	}
	t.Logf("resumed: %v", rows[0].Resumed)
	promoted, err := name.NewDigest(rows[0].Reference)
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code = s.imagectl(t, ctx, "scan", rows[0].Ref, "--key", dr.keys.signPub, "--db", db1, "--vex", vexPath)
	if code != 0 || !strings.Contains(out, "CVE-2026-32316") || !strings.Contains(out, "suppressed: not_affected (vulnerable_code_not_in_execute_path)") {
		t.Errorf("scan --vex: exit %d, want the jq finding reported suppressed:\n%s\n%s", code, out, errs)
	}
	latest, err := report.Latest(ctx, promoted, dr.keys.signPub)
	if err != nil {
		t.Fatalf("the promoted digest's vuln attestation: %v", err)
	}
	if f := latestFinding(latest, "CVE-2026-32316"); f == nil || f.Suppressed == nil {
		t.Errorf("the attested scan of %s: jq finding %+v, want it suppressed", promoted, f)
	}

	// 3. scan with a stale database refuses, naming its build date and the limit.
	if _, errs, code := s.imagectl(t, ctx, "scan", rows[0].Ref, "--key", dr.keys.signPub, "--db", stale); code != exitcode.Failure ||
		!strings.Contains(errs, "older than the limit --max-db-age 120h0m0s") || !strings.Contains(errs, "was built") {
		t.Errorf("scan with a 10-day-old database: exit %d, want %d and the stale-database error:\n%s", code, exitcode.Failure, errs)
	}

	// 4. Stock cosign verifies the promoted digest's vuln attestation.
	cos := exec.CommandContext(ctx, filepath.Join(dr.env.Bin, "cosign"), "verify-attestation", "--key", dr.keys.signPub,
		"--insecure-ignore-tlog", "--allow-insecure-registry", "--type", "vuln", promoted.String())
	if b, err := cos.CombinedOutput(); err != nil {
		t.Errorf("cosign verify-attestation --type vuln %s: %v\n%s", promoted, err, b)
	}

	// 5. The daily re-scan: a record published after promotion is found new
	// and breaks the policy (exit 5); the next day nothing is new.
	rescan := []string{"scan", "releases", s.images, "--spec", s.spec, "--var", "registry=" + dr.env.Registry,
		"--var", "wheel_index=" + dr.index.URL, "--key", dr.keys.signPub, "--signing-key", dr.keys.signKey, "-o", "json"}
	out, errs, code = s.imagectl(t, ctx, append(rescan, "--db", db2)...)
	var rs []scan.Rescan
	if code != exitcode.PromotionRefused || json.Unmarshal([]byte(out), &rs) != nil || len(rs) != 1 {
		t.Fatalf("scan releases with the pip record added: exit %d, want %d\n%s\n%s", code, exitcode.PromotionRefused, out, errs)
	}
	if rs[0].Digest != promoted.String() || len(rs[0].New) != 1 || rs[0].New[0].ID != "GHSA-4xh5-x5gv-qwph" || len(rs[0].Breaking) != 1 || rs[0].Previous == "" {
		t.Errorf("scan releases = %+v, want %s with GHSA-4xh5-x5gv-qwph alone new and breaking", rs[0], promoted)
	}
	if !strings.Contains(errs, "GHSA-4xh5-x5gv-qwph") || !strings.Contains(errs, "pip") {
		t.Errorf("scan releases error does not name the finding:\n%s", errs)
	}
	out, errs, code = s.imagectl(t, ctx, append(rescan, "--db", db2)...)
	if code != 0 || json.Unmarshal([]byte(out), &rs) != nil || len(rs) != 1 || len(rs[0].New) != 0 {
		t.Errorf("scan releases again: exit %d, want 0 and nothing new\n%s\n%s", code, out, errs)
	}
}

func latestFinding(r *report.Result, id string) *report.Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

// scanJQ is bookworm's jq (the main archive, not bookworm-security's
// fixed 1.6-2.1+deb12u3): the version the fixture record CVE-2026-32316
// applies to.
const scanJQ = "1.6-2.1+deb12u2"

// writeScanSpec writes specs/demo.hcl with dr's repositories, jq pinned to
// scanJQ and extra (HCL) added to the image block, and returns its path.
func writeScanSpec(t *testing.T, dr *demoRelease, extra string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dr.env.Root, "specs", "demo.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	repos := dr.imgs[0].Repos
	for old, repl := range map[string]string{
		`staging = "${var.registry}/imagectl/staging/demo"`: fmt.Sprintf("staging = %q", repos.Staging),
		`release = "${var.registry}/imagectl/demo"`:         fmt.Sprintf("release = %q", repos.Release),
		"\n  repos {":  extra + "\n  repos {",
		`apt = ["jq"]`: fmt.Sprintf(`apt = ["jq=%s", "libjq1=%s"]`, scanJQ, scanJQ),
	} {
		if !strings.Contains(src, old) {
			t.Fatalf("specs/demo.hcl: %q is not where the test rewrites it", old)
		}
		src = strings.Replace(src, old, repl, 1)
	}
	path := filepath.Join(t.TempDir(), "demo.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
