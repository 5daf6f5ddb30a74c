package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
	"imagectl/internal/runtime"
)

func writeFingerprint(t *testing.T, path string, fp runtime.Fingerprint) {
	t.Helper()
	b, err := json.Marshal(fp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFingerprintDiffCLI(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	fa := runtime.Fingerprint{Version: runtime.FingerprintVersion, Arch: "amd64", Swappiness: 60,
		Driver: runtime.Driver{Version: "580.159.04", GPUs: []runtime.GPU{{Model: "NVIDIA H200", BusLocation: "0000:19:00.0"}}}}
	fb := fa
	fb.Driver = runtime.Driver{Version: "535.104.05", GPUs: []runtime.GPU{{Model: "NVIDIA H200", BusLocation: "0000:19:00.0"}}}
	fb.Swappiness = 10
	writeFingerprint(t, a, fa)
	writeFingerprint(t, b, fb)

	out, errs, code := run(t, "", "fingerprint", "diff", "-o", "json", a, b)
	if code != 0 {
		t.Fatalf("fingerprint diff -o json: exit %d: %s", code, errs)
	}
	var diffs []runtime.Difference
	if err := json.Unmarshal([]byte(out), &diffs); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if len(diffs) != 2 || diffs[0].Field != "driver.version" || diffs[0].B != "535.104.05" || diffs[1].Field != "swappiness" {
		t.Errorf("diff = %+v, want driver.version and swappiness", diffs)
	}

	out, _, code = run(t, "", "fingerprint", "diff", a, b)
	if code != 0 || !strings.Contains(out, "driver.version") || !strings.Contains(out, "580.159.04") {
		t.Errorf("human diff: exit %d, %q", code, out)
	}
	out, _, _ = run(t, "", "fingerprint", "diff", a, a)
	if !strings.Contains(out, "same environment") {
		t.Errorf("diff of a file with itself = %q, want 'same environment'", out)
	}
	out, _, _ = run(t, "", "fingerprint", "diff", "-o", "json", a, a)
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("json diff of a file with itself = %q, want []", out)
	}
	if _, _, code := run(t, "", "fingerprint", "diff", a); code != exitcode.Usage {
		t.Errorf("one argument: exit %d, want %d", code, exitcode.Usage)
	}
	if _, _, code := run(t, "", "fingerprint", "diff", "-o", "yaml", a, b); code != exitcode.Usage {
		t.Errorf("-o yaml: exit %d, want %d", code, exitcode.Usage)
	}
	if _, errs, code := run(t, "", "fingerprint", "diff", a, filepath.Join(dir, "missing.json")); code != exitcode.Failure || !strings.Contains(errs, "missing.json") {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
}

func TestDoctorCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "runtime.json")
	if err := os.WriteFile(cfg, []byte(`{"storage":{"path":"`+filepath.Join(dir, "storage")+`"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(runtime.EnvConfig, cfg)
	out, _, code := run(t, "", "doctor", "-o", "json")
	if code != exitcode.Failure {
		t.Errorf("doctor with storage not mounted: exit %d, want %d", code, exitcode.Failure)
	}
	var r runtime.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor -o json %q: %v", out, err)
	}
	var storage runtime.Check
	for _, c := range r.Checks {
		if c.Name == "storage" {
			storage = c
		}
	}
	if storage.Status != runtime.StatusFail || !strings.Contains(storage.Found, "not a mount point") {
		t.Errorf("storage check = %+v, want fail: not a mount point", storage)
	}
	t.Setenv(runtime.EnvStorageTimeout, "soon")
	if _, _, code := run(t, "", "doctor"); code != exitcode.Usage {
		t.Errorf("bad override: exit %d, want %d", code, exitcode.Usage)
	}
}
