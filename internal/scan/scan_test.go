package scan_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/sbom"
	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/scan"
	"imagectl/internal/scan/report"
	"imagectl/internal/scan/scantest"
)

var demoRef, _ = name.NewDigest("127.0.0.1:5000/imagectl/staging/demo@sha256:" + strings.Repeat("a", 64))

// demoLock is shaped like the demo image's lock: jq from bookworm (the
// build before the jq fix of bookworm-security) and the pip wheel Debian
// ships (23.0.1) as the resolver in the venv.
func demoLock() *lock.Lock {
	return &lock.Lock{
		SchemaVersion:   lock.SchemaVersion,
		Name:            "demo",
		Spec:            lock.Source{Path: "specs/demo.hcl"},
		SourceDateEpoch: 1764460800,
		Base:            lock.Base{Ref: "127.0.0.1:5000/imagectl/debian-base:bookworm", ManifestDigest: "sha256:" + strings.Repeat("b", 64)},
		Resolver:        lock.Wheel{Name: "pip", Version: "23.0.1", Filename: "pip-23.0.1-py3-none-any.whl", URL: "http://index/pip.whl", SHA256: strings.Repeat("3", 64)},
		Apt: []lock.Deb{
			{Name: "jq", Version: "1.6-2.1+deb12u2", Arch: "amd64", URL: "http://mirror/pool/jq.deb", SHA256: strings.Repeat("c", 64)},
			{Name: "libjq1", Version: "1.6-2.1+deb12u2", Arch: "amd64", URL: "http://mirror/pool/libjq1.deb", SHA256: strings.Repeat("d", 64)},
		},
		Pip: []lock.Wheel{
			{Name: "demo-core", Version: "1.0.0", Filename: "demo_core-1.0.0-py3-none-any.whl", URL: "http://index/demo-core.whl", SHA256: strings.Repeat("1", 64)},
		},
		Digest: "sha256:" + strings.Repeat("9", 64),
	}
}

// demoSBOM is the CycloneDX document imagectl's sign stage attests for
// an image built from demoLock.
func demoSBOM(t testing.TB) []byte {
	t.Helper()
	l := demoLock()
	img, err := sbomtest.Image(l)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := sbom.Read(context.Background(), img, l)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sbom.CycloneDX(inv, demoRef, l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openDB(t *testing.T, dir string, opts ...scan.Option) *scan.DB {
	t.Helper()
	db, err := scan.OpenDB(context.Background(), dir, append([]scan.Option{scan.WithCacheDir(t.TempDir())}, opts...)...)
	if err != nil {
		t.Fatalf("OpenDB(%s) = %v", dir, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func byID(r *scan.Result) map[string]scan.Finding {
	m := map[string]scan.Finding{}
	for _, f := range r.Findings {
		m[f.ID] = f
	}
	return m
}

// TestSBOMMatchesRealRecords: grype finds the Debian jq record (fixed in
// 1.6-2.1+deb12u3) and both pip advisories in the demo image's SBOM,
// with the fix versions and severities of the records.
func TestSBOMMatchesRealRecords(t *testing.T) {
	db := openDB(t, scantest.BuildDB(t, time.Time{}))
	r, err := scan.SBOM(context.Background(), demoSBOM(t), db)
	if err != nil {
		t.Fatalf("SBOM = %v", err)
	}
	got := byID(r)
	want := []struct{ id, pkg, installed, fixed, severity string }{
		{"CVE-2026-32316", "jq", "1.6-2.1+deb12u2", "1.6-2.1+deb12u3", "high"},
		{"GHSA-4xh5-x5gv-qwph", "pip", "23.0.1", "25.3", "medium"},
		{"GHSA-mq26-g339-26xf", "pip", "23.0.1", "23.3", "low"},
	}
	for _, w := range want {
		f, ok := got[w.id]
		if !ok {
			t.Errorf("no finding %s; findings: %+v", w.id, r.Findings)
			continue
		}
		if f.Package != w.pkg || f.Installed != w.installed || strings.Join(f.FixedIn, ",") != w.fixed || f.Severity != w.severity {
			t.Errorf("%s = %s %s fixed in %v severity %s, want %s %s fixed in %s severity %s", w.id, f.Package, f.Installed, f.FixedIn, f.Severity, w.pkg, w.installed, w.fixed, w.severity)
		}
	}
	if len(r.Findings) != len(want) {
		t.Errorf("%d findings, want %d: %+v", len(r.Findings), len(want), r.Findings)
	}
	if _, ok := got["GHSA-4xh5-x5gv-qwph"]; ok && !contains(got["GHSA-4xh5-x5gv-qwph"].Aliases, "CVE-2025-8869") {
		t.Errorf("GHSA-4xh5-x5gv-qwph aliases = %v, want CVE-2025-8869", got["GHSA-4xh5-x5gv-qwph"].Aliases)
	}
	if !strings.HasPrefix(r.Product, "pkg:oci/demo@sha256:") {
		t.Errorf("Product = %q, want the image's pkg:oci purl", r.Product)
	}
	if r.DB.Schema == "" || !strings.HasPrefix(r.DB.Digest, "sha256:") || r.Scanner.Version == "" {
		t.Errorf("result names db %+v scanner %+v, want schema, digest and version", r.DB, r.Scanner)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestSBOMNoRecordNoFinding: a database without the jq record finds only
// pip's: a match comes from the database, not from the package list.
func TestSBOMNoRecordNoFinding(t *testing.T) {
	db := openDB(t, scantest.BuildDB(t, time.Time{}, scantest.PipTar))
	r, err := scan.SBOM(context.Background(), demoSBOM(t), db)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].ID != "GHSA-4xh5-x5gv-qwph" {
		t.Errorf("findings = %+v, want only GHSA-4xh5-x5gv-qwph", r.Findings)
	}
}

// TestOpenDBStale: a database built 6 days ago is refused with the build
// date and the limit; a longer limit accepts it.
func TestOpenDBStale(t *testing.T) {
	built := time.Now().Add(-144 * time.Hour)
	dir := scantest.BuildDB(t, built, scantest.PipTar)
	_, err := scan.OpenDB(context.Background(), dir, scan.WithCacheDir(t.TempDir()))
	var stale *scan.StaleDBError
	if !errors.As(err, &stale) {
		t.Fatalf("OpenDB(6 days old) = %v, want a *StaleDBError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, built.UTC().Round(time.Second).Format(time.RFC3339)) || !strings.Contains(msg, "120h") {
		t.Errorf("error %q does not name the build date %s and the limit 120h", msg, built.UTC().Format(time.RFC3339))
	}
	openDB(t, dir, scan.WithMaxDBAge(200*time.Hour))
}

// TestOpenDBArchive: a grype archive (what `grype db import` reads) is
// imported once into the cache and gives the same database.
func TestOpenDBArchive(t *testing.T) {
	dir := scantest.BuildDB(t, time.Time{}, scantest.JQ)
	archive := scantest.Archive(t, dir)
	cache := t.TempDir()
	db := openDB(t, archive, scan.WithCacheDir(cache))
	r, err := scan.SBOM(context.Background(), demoSBOM(t), db)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].ID != "CVE-2026-32316" {
		t.Errorf("findings = %+v, want CVE-2026-32316", r.Findings)
	}
	if db.Source != archive {
		t.Errorf("Source = %q, want %q", db.Source, archive)
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 1 {
		t.Errorf("cache holds %d entries, want one import", len(entries))
	}
	openDB(t, archive, scan.WithCacheDir(cache))
	if again, _ := os.ReadDir(cache); len(again) != 1 {
		t.Errorf("a second open imported again: %d entries", len(again))
	}
}

// TestPredicateRoundTrip: the vuln predicate carries cosign's fields and
// the result reads back from it.
func TestPredicateRoundTrip(t *testing.T) {
	db := openDB(t, scantest.BuildDB(t, time.Time{}))
	r, err := scan.SBOM(context.Background(), demoSBOM(t), db)
	if err != nil {
		t.Fatal(err)
	}
	b, err := report.Predicate(r)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Scanner struct {
			URI, Version string
			DB           struct{ URI, Version string }
		}
		Metadata struct{ ScanStartedOn, ScanFinishedOn time.Time }
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.Scanner.URI != scan.ScannerURI || p.Scanner.DB.URI != db.Source || !strings.Contains(p.Scanner.DB.Version, db.Digest) || p.Metadata.ScanFinishedOn.IsZero() {
		t.Errorf("predicate = %s, want scanner, db uri/version and scan times", b)
	}
	back, err := report.ParsePredicate(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Findings) != len(r.Findings) || back.Findings[0].ID != r.Findings[0].ID {
		t.Errorf("ParsePredicate findings = %+v, want %+v", back.Findings, r.Findings)
	}
}

// TestVEXSuppresses: a not_affected statement for pip's CVE on the demo
// image suppresses that finding (reported, with its justification) and
// no other; a statement for a CVE the image lacks is reported unused.
func TestVEXSuppresses(t *testing.T) {
	doc := `{
  "@context": "https://openvex.dev/ns/v0.2.0",
  "@id": "https://imagectl.dev/vex/demo-1",
  "author": "platform team",
  "timestamp": "2026-12-01T00:00:00Z",
  "version": 1,
  "statements": [
    {"vulnerability": {"name": "CVE-2025-8869"},
     "products": [{"@id": "pkg:oci/demo", "subcomponents": [{"@id": "pkg:pypi/pip"}]}],
     "status": "not_affected", "justification": "vulnerable_code_not_in_execute_path",
     "impact_statement": "the image installs wheels only; pip never unpacks an sdist at run time"},
    {"vulnerability": {"name": "CVE-2024-0000"},
     "products": [{"@id": "pkg:oci/demo"}],
     "status": "not_affected", "justification": "component_not_present"}
  ]
}`
	path := filepath.Join(t.TempDir(), "vex.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := scan.LoadVEX(path)
	if err != nil {
		t.Fatalf("LoadVEX = %v", err)
	}
	db := openDB(t, scantest.BuildDB(t, time.Time{}))
	r, err := scan.SBOM(context.Background(), demoSBOM(t), db, scan.WithVEX(src))
	if err != nil {
		t.Fatal(err)
	}
	got := byID(r)
	if s := got["GHSA-4xh5-x5gv-qwph"].Suppressed; s == nil || s.Status != "not_affected" || s.Justification != "vulnerable_code_not_in_execute_path" {
		t.Errorf("GHSA-4xh5-x5gv-qwph suppressed = %+v, want not_affected vulnerable_code_not_in_execute_path", s)
	}
	if got["CVE-2026-32316"].Suppressed != nil || got["GHSA-mq26-g339-26xf"].Suppressed != nil {
		t.Errorf("other findings suppressed: %+v", r.Findings)
	}
	if n := len(r.Active()); n != 2 {
		t.Errorf("Active = %d findings, want 2", n)
	}
	unused := scan.UnusedStatements(r, []scan.VEXSource{src})
	if len(unused) != 1 || !strings.Contains(unused[0], "CVE-2024-0000") {
		t.Errorf("UnusedStatements = %v, want the CVE-2024-0000 statement", unused)
	}
	var tbl strings.Builder
	if err := r.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tbl.String(), "suppressed: not_affected (vulnerable_code_not_in_execute_path)") {
		t.Errorf("table does not report the suppression:\n%s", tbl.String())
	}
}

// TestLoadVEXNeedsJustification: a not_affected statement without a
// justification is refused, naming the file and the statement.
func TestLoadVEXNeedsJustification(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vex.json")
	os.WriteFile(path, []byte(`{"@context": "https://openvex.dev/ns/v0.2.0", "@id": "x", "author": "a", "timestamp": "2026-12-01T00:00:00Z", "version": 1,
 "statements": [{"vulnerability": {"name": "CVE-2025-8869"}, "products": [{"@id": "pkg:oci/demo"}], "status": "not_affected"}]}`), 0o644)
	_, err := scan.LoadVEX(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "CVE-2025-8869") {
		t.Errorf("LoadVEX = %v, want an error naming %s and CVE-2025-8869", err, path)
	}
}
