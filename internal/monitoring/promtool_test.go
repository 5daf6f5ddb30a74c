package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// promtool returns bin/promtool of the repository (hack/tools.sh builds it
// from tools/promtool). Missing, it fails the test under IMAGECTL_E2E=1
// and skips it otherwise.
func promtool(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "bin", "promtool")
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatalf("IMAGECTL_E2E=1 but %s is missing (hack/tools.sh builds it from tools/promtool)", p)
		}
		t.Skipf("%s is missing: hack/tools.sh builds it from tools/promtool", p)
	}
	return p
}

func runPromtool(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ruleTests are the promtool rule test files under testdata/.
var ruleTests = []string{"rules_test.yml", "rules_age_test.yml"}

// TestRulesWithPromtool renders the rules with the default thresholds and
// has Prometheus's own engine check them and run testdata's rule tests.
func TestRulesWithPromtool(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	if _, err := Render(dir, Defaults(), ""); err != nil {
		t.Fatal(err)
	}
	for _, f := range ruleTests {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := runPromtool(t, bin, dir, "check", "rules", RulesFileName)
	if want := "SUCCESS: " + strconv.Itoa(len(Alerts())) + " rules found"; !strings.Contains(out, want) {
		t.Errorf("promtool check rules said %q, want %q", out, want)
	}
	runPromtool(t, bin, dir, append([]string{"test", "rules"}, ruleTests...)...)
}

// TestRulesTestFailsOnAWrongExpectation: a rule test that expects an alert
// the rules do not fire fails, so TestRulesWithPromtool's pass means
// something.
func TestRulesTestFailsOnAWrongExpectation(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	if _, err := Render(dir, Defaults(), ""); err != nil {
		t.Fatal(err)
	}
	wrong := `rule_files: [` + RulesFileName + `]
tests:
  - interval: 1m
    input_series:
      - series: 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}'
        values: '84x10'
    alert_rule_test:
      - eval_time: 9m
        alertname: GPUHot
        exp_alerts:
          - exp_labels: {severity: warning, gpu: "0"}
`
	if err := os.WriteFile(filepath.Join(dir, "wrong_test.yml"), []byte(wrong), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "test", "rules", "wrong_test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("promtool test rules passed a test expecting GPUHot at 84 C:\n%s", out)
	}
}

// TestRulesTestCoversEveryAlert: testdata's rule tests have, for every
// alert, a case where it fires and one where it stays silent.
func TestRulesTestCoversEveryAlert(t *testing.T) {
	fires, silent := map[string]int{}, map[string]int{}
	for _, name := range ruleTests {
		countCases(t, name, fires, silent)
	}
	for _, a := range Alerts() {
		if fires[a] == 0 || silent[a] == 0 {
			t.Errorf("alert %s: %d firing and %d silent cases in testdata %v, want at least one of each", a, fires[a], silent[a], ruleTests)
		}
		delete(fires, a)
		delete(silent, a)
	}
	for a := range fires {
		t.Errorf("testdata tests %s, which no rule defines", a)
	}
	for a := range silent {
		t.Errorf("testdata tests %s, which no rule defines", a)
	}
}

func countCases(t *testing.T, name string, fires, silent map[string]int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname]++
			} else {
				silent[a.Alertname]++
			}
		}
	}
}
