package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
	"imagectl/internal/monitoring"
)

// TestMonitoringRender: render writes the three files and prints their
// paths on stdout; a threshold flag reaches the rules; a bad threshold or a
// missing --out is a usage error that writes nothing.
func TestMonitoringRender(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := run(t, "", "monitoring", "render", "--out", dir, "--gpu-hot-celsius", "80", "--gpu-idle-for", "20m")
	if code != exitcode.OK {
		t.Fatalf("render: exit %d, stderr %s", code, stderr)
	}
	var want []string
	for _, f := range []string{monitoring.RulesFileName, monitoring.PrometheusRuleFileName, monitoring.DashboardFileName} {
		want = append(want, filepath.Join(dir, f))
	}
	if got := strings.Fields(stdout); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("stdout = %q, want the paths %v", stdout, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, monitoring.RulesFileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"DCGM_FI_DEV_GPU_TEMP > 80", "for: 20m"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("rules lack %q:\n%s", w, b)
		}
	}
	for _, args := range [][]string{
		{"monitoring", "render"},
		{"monitoring", "render", "--out", filepath.Join(t.TempDir(), "bad"), "--framebuffer-full-ratio", "2"},
		{"monitoring", "render", "--out", filepath.Join(t.TempDir(), "bad"), "--gpu-critical-celsius", "70"},
	} {
		if _, stderr, code := run(t, "", args...); code != exitcode.Usage {
			t.Errorf("%v: exit %d (stderr %s), want %d", args, code, stderr, exitcode.Usage)
		}
		if len(args) > 2 {
			if _, err := os.Stat(args[3]); err == nil {
				t.Errorf("%v wrote %s", args, args[3])
			}
		}
	}
}
