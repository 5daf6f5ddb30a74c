package scan_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"imagectl/internal/monitoring"
	"imagectl/internal/scan"
	"imagectl/internal/testenv"
)

// TestRescanMetrics: findings by severity, new ones by severity and
// fixability (suppressed ones left out), a re-scan that stopped on an error
// is a failed one but a broken policy is not; the file promtool parses
// fires ImagectlNewFixableCritical and ImagectlRescanFailed with the labels
// the rules document, and nothing else.
func TestRescanMetrics(t *testing.T) {
	now := time.Unix(1764806400, 0)
	res := []scan.Rescan{{
		Image: "demo", Month: "2026-12", Digest: "reg/demo@sha256:aa",
		Severities: map[string]int{"critical": 1, "high": 2},
		New: []scan.Finding{
			{ID: "CVE-1", Severity: "Critical", FixedIn: []string{"2"}},
			{ID: "CVE-2", Severity: "Critical"},
			{ID: "CVE-3", Severity: "High", FixedIn: []string{"2"}, Suppressed: &scan.Suppression{Status: "not_affected"}},
		},
	}}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"ok", nil, "imagectl_rescan_success 1\n"},
		{"policy broken", &scan.BreaksPolicyError{Rescans: res}, "imagectl_rescan_success 1\n"},
		{"stopped", errors.New("registry unreachable"), "imagectl_rescan_success 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rescan.prom")
			if err := scan.WriteRescanTextfile(path, res, tc.err, now); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), tc.want) {
				t.Errorf("metrics = %s, %v; want %q", b, err, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "rescan.prom")
	if err := scan.WriteRescanTextfile(path, res, errors.New("registry unreachable"), now); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`imagectl_scan_new_findings{digest="reg/demo@sha256:aa",fixable="false",image="demo",month="2026-12",platform="",severity="critical"} 1`,
		`imagectl_scan_new_findings{digest="reg/demo@sha256:aa",fixable="true",image="demo",month="2026-12",platform="",severity="critical"} 1`,
		`imagectl_scan_findings{digest="reg/demo@sha256:aa",image="demo",month="2026-12",platform="",severity="high"} 2`,
		`imagectl_rescan_timestamp_seconds 1.7648064e+09`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics file lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), `severity="high"} 1`) {
		t.Errorf("a VEX-suppressed new finding is counted:\n%s", b)
	}
	reg := scan.RescanMetrics(res, nil, now)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !slices.Contains(monitoring.ImagectlMetrics(), mf.GetName()) {
			t.Errorf("the re-scan writes %s, which is not in monitoring.ImagectlMetrics", mf.GetName())
		}
	}
	testenv.CheckMetrics(t, path)
	testenv.EvalRules(t, path, map[string][]map[string]string{
		monitoring.AlertNewFixableCritical: {{"severity": "critical", "image": "demo", "month": "2026-12", "digest": "reg/demo@sha256:aa"}},
		monitoring.AlertRescanFailed:       {{"severity": "warning"}},
	}, nil)
}
