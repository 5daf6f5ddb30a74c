package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"imagectl/internal/monitoring"
)

// EvalRules has promtool evaluate imagectl's alerting rules (default
// thresholds) over the samples of the exposition-format metrics file at
// path, each held for an hour: the alerts in want (alert name -> the label
// sets it fires with) must fire at 10m, every other alert of
// monitoring.Alerts() must stay silent, and each exprs query (PromQL ->
// its value) must give that one sample.
func EvalRules(t testing.TB, path string, want map[string][]map[string]string, exprs map[string]float64) {
	t.Helper()
	bin := Promtool(t)
	mfs := ParseMetrics(t, path)
	type series struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	}
	var input []series
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			input = append(input, series{Series: name + "{" + strings.Join(ls, ", ") + "}", Values: strconv.FormatFloat(v, 'f', -1, 64) + "x60"})
		}
	}
	sort.Slice(input, func(i, j int) bool { return input[i].Series < input[j].Series })
	type sample struct {
		Labels string  `yaml:"labels"`
		Value  float64 `yaml:"value"`
	}
	type exprTest struct {
		Expr       string   `yaml:"expr"`
		EvalTime   string   `yaml:"eval_time"`
		ExpSamples []sample `yaml:"exp_samples"`
	}
	// The alerts through the ALERTS series the rule manager writes: an
	// alert_rule_test would also compare every annotation's text.
	var ets []exprTest
	for _, a := range monitoring.Alerts() {
		et := exprTest{Expr: fmt.Sprintf(`ALERTS{alertstate="firing", alertname=%q}`, a), EvalTime: "10m", ExpSamples: []sample{}}
		for _, ls := range want[a] {
			l := []string{fmt.Sprintf("alertname=%q", a), `alertstate="firing"`}
			for k, v := range ls {
				l = append(l, fmt.Sprintf("%s=%q", k, v))
			}
			et.ExpSamples = append(et.ExpSamples, sample{Labels: "ALERTS{" + strings.Join(l, ", ") + "}", Value: 1})
		}
		ets = append(ets, et)
	}
	for e, v := range exprs {
		ets = append(ets, exprTest{Expr: e, EvalTime: "10m", ExpSamples: []sample{{Labels: "{}", Value: v}}})
	}
	doc := map[string]any{
		"rule_files": []string{monitoring.RulesFileName},
		"tests": []map[string]any{{
			"interval": "1m", "input_series": input, "promql_expr_test": ets,
		}},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := monitoring.Render(dir, monitoring.Defaults(), ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics_test.yml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "test", "rules", "metrics_test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules over the series of %s: %v\n%s\n%s", path, err, out, b)
	}
}

// ParseMetrics reads the exposition-format metrics file at path into its
// metric families by name, failing t when it cannot be read or parsed.
func ParseMetrics(t testing.TB, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return mfs
}
