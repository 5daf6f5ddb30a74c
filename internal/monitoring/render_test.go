package monitoring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestThresholdsReachTheRules: a changed parameter changes the expression
// or the for: of its rule (and the dashboard's thresholds), so the flags
// are real parameters.
func TestThresholdsReachTheRules(t *testing.T) {
	th := Defaults()
	th.GPUHotCelsius, th.GPUHotFor = 78.5, 7*time.Minute
	th.GPUIdleMemoryMiB = 2048
	th.ReleaseStaleAge = 40 * 24 * time.Hour
	th.FramebufferFullRatio = 0.9
	got := map[string]Rule{}
	for _, g := range Rules(th) {
		for _, r := range g.Rules {
			got[r.Alert] = r
		}
	}
	for _, tc := range []struct{ alert, expr, for_ string }{
		{AlertGPUHot, "DCGM_FI_DEV_GPU_TEMP > 78.5", "7m"},
		{AlertGPUAllocatedIdle, "DCGM_FI_DEV_GPU_UTIL < 5 and DCGM_FI_DEV_FB_USED > 2048", "10m"},
		{AlertGPUFramebufferFull, "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.9", "15m"},
		{AlertReleaseStale, "time() - imagectl_release_timestamp_seconds > 3456000", ""},
	} {
		r := got[tc.alert]
		if r.Expr != tc.expr || r.For != tc.for_ {
			t.Errorf("%s: expr %q for %q, want %q for %q", tc.alert, r.Expr, r.For, tc.expr, tc.for_)
		}
	}
	d := NewDashboard(th)
	var found bool
	for _, p := range d.Panels {
		if p.Title == "GPU temperature" {
			s := p.FieldConfig.Defaults.Thresholds.Steps
			found = *s[1].Value == 78.5 && *s[2].Value == 90
		}
	}
	if !found {
		t.Error("the temperature panel does not draw the thresholds passed in")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Thresholds)
		want string
	}{
		{"negative", func(t *Thresholds) { t.GPUHotCelsius = -1 }, "gpu-hot-celsius"},
		{"ratio", func(t *Thresholds) { t.FramebufferFullRatio = 1.5 }, "framebuffer-full-ratio"},
		{"critical below hot", func(t *Thresholds) { t.GPUCriticalCelsius = 80 }, "gpu-critical-celsius"},
		{"stale", func(t *Thresholds) { t.RescanStaleAge = time.Second }, "rescan-stale-age"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := Defaults()
			tc.edit(&th)
			err := th.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.want)
			}
			if _, err := Render(t.TempDir(), th, ""); err == nil {
				t.Error("Render wrote files for invalid thresholds")
			}
		})
	}
	if err := Defaults().Validate(); err != nil {
		t.Errorf("Defaults().Validate() = %v", err)
	}
}

// TestPrometheusRule: the manifest is a monitoring.coreos.com/v1
// PrometheusRule whose groups are the rule file's.
func TestPrometheusRule(t *testing.T) {
	dir := t.TempDir()
	paths, err := Render(dir, Defaults(), "monitoring")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Fatalf("Render wrote %v, want 3 files", paths)
	}
	var m struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string            `yaml:"name"`
			Namespace string            `yaml:"namespace"`
			Labels    map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			Groups []RuleGroup `yaml:"groups"`
		} `yaml:"spec"`
	}
	b, err := os.ReadFile(filepath.Join(dir, PrometheusRuleFileName))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "monitoring.coreos.com/v1" || m.Kind != "PrometheusRule" || m.Metadata.Name != "imagectl" || m.Metadata.Namespace != "monitoring" {
		t.Errorf("manifest head %s %s %s/%s", m.APIVersion, m.Kind, m.Metadata.Namespace, m.Metadata.Name)
	}
	var rules struct {
		Groups []RuleGroup `yaml:"groups"`
	}
	rb, err := os.ReadFile(filepath.Join(dir, RulesFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(rb, &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules.Groups) != 2 || len(m.Spec.Groups) != 2 || len(m.Spec.Groups[1].Rules) != len(rules.Groups[1].Rules) {
		t.Errorf("the manifest's groups differ from the rule file's")
	}
}
