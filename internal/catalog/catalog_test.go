package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/discover"
	"imagectl/internal/promote"
	"imagectl/internal/scan/report"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

// fakeSite is a line with two releases: the newest verified, passing on a
// GPU, with a changelog naming a changed wheel and a fixed CVE.
func fakeSite() *Site {
	d := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	repo := "registry.example/ml/demo"
	lock := &promote.LockSummary{Name: "demo", Torch: "2.6.0", CUDA: "12.4", Python: "3.11", NCCL: "2.21.5", CUDNN: "9.1", DriverFloor: "550.54", Debs: 120, Wheels: 40}
	img := discover.PlatformDetails{Platform: "linux/amd64", Digest: d("c"), Size: 3 << 30, Layers: 9, Packages: map[string]int{"deb": 120, "pypi": 40},
		Scan: &discover.ScanSummary{Finished: "2026-12-02T00:00:00Z", DBBuilt: "2026-12-01", Findings: 2, Suppressed: 1, BySeverity: map[string]int{"high": 1, "low": 1}},
		Verification: &discover.Verification{Passed: true, Runtime: "containerd", GPU: "NVIDIA H200", GPUs: 8, Driver: "570.86",
			Checks: []verify.Check{{Name: "allreduce", Status: verify.Pass, Value: "412.3 GB/s"}, {Name: "compile-cold", Status: verify.Pass, Seconds: 41.2}, {Name: "compile-warm", Status: verify.Pass, Seconds: 6.1}}}}
	return &Site{Generated: "2026-12-04T00:00:00Z", Lines: []Line{{Name: "demo", Repository: repo, Page: "lines/demo.html", Releases: []Entry{
		{Release: discover.Release{Ref: repo + "@" + d("b"), Digest: d("b"), Tags: []string{"demo-2026.12"}, Moving: []string{"demo"}, Month: "2026-12", Verified: true, Lock: lock, Platforms: []string{"linux/amd64"}},
			Anchor: "release-demo-2026.12", SupportEnd: "2027-11-30", SupportState: discover.Supported, Pin: "imagectl pin " + repo + ":demo-2026.12", PinRef: repo + "@" + d("b"),
			Images: []discover.PlatformDetails{img},
			Changes: &Changes{Since: "demo-2026.11", Summary: "1 package(s) changed", Changed: []discover.PackageChange{{Type: "pypi", Name: "demo-util", Old: "1.0.0", New: "1.1.0"}},
				Fixed: []report.Finding{{ID: "CVE-2026-32316", Package: "jq", Installed: "1.6-2.1+deb12u2", Severity: "High"}}}},
		{Release: discover.Release{Ref: repo + "@" + d("a"), Digest: d("a"), Tags: []string{"demo-2026.11"}, Month: "2026-11", Verified: true, Lock: lock},
			Anchor: "release-demo-2026.11", SupportEnd: "2026-11-30", SupportState: discover.Expired, Pin: "imagectl pin " + repo + ":demo-2026.11", PinRef: repo + "@" + d("a"),
			Images: []discover.PlatformDetails{{Platform: "linux/amd64", Digest: d("a"), Packages: map[string]int{}}}},
	}}}}
}

func TestWriteSite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "site")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stale.html"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, fakeSite()); err != nil {
		t.Fatalf("Write() = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stale.html")); err == nil {
		t.Error("Write() kept a file of the previous site")
	}
	var back Site
	b, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	if err != nil || json.Unmarshal(b, &back) != nil || len(back.Lines) != 1 || len(back.Lines[0].Releases) != 2 {
		t.Fatalf("catalog.json = %s, %v", b, err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "lines", "demo.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"imagectl pin registry.example/ml/demo:demo-2026.12", "2.6.0", "550.54", "NVIDIA H200", "412.3 GB/s",
		"demo-util", "CVE-2026-32316", "2027-11-30", "expired", "<caption>", `scope="col"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("lines/demo.html does not say %q", want)
		}
	}
	if strings.Contains(string(page), "<script") {
		t.Error("the page has a script: the catalog is plain HTML")
	}
}

// TestSiteInChromium renders the fake site in headless Chromium: no
// console errors, every link and resource resolves, the facts are in the
// DOM.
func TestSiteInChromium(t *testing.T) {
	testenv.NeedChromium(t)
	dir := filepath.Join(t.TempDir(), "site")
	if err := Write(dir, fakeSite()); err != nil {
		t.Fatal(err)
	}
	pages := testenv.CheckSite(t, testenv.ServeSite(t, dir))
	if len(pages) != 2 {
		t.Errorf("rendered %d pages, want index and the line's", len(pages))
	}
	if p := pages["/lines/demo.html"]; !strings.Contains(p.DOM, "NVIDIA H200") || !strings.Contains(p.DOM, "demo-util") {
		t.Errorf("the line's rendered DOM lacks the GPU or the changed wheel")
	}
}
