package monitoring

import (
	"fmt"
	"os"
	"path/filepath"

	"imagectl/internal/atomicfile"
)

// The files Render writes.
const (
	RulesFileName          = "imagectl-rules.yml"
	PrometheusRuleFileName = "imagectl-prometheusrule.yaml"
	DashboardFileName      = "imagectl-dashboard.json"
)

// Render writes into dir (created when missing) the rule file, the
// PrometheusRule manifest (name imagectl, in namespace when not empty) and
// the Grafana dashboard for t, each atomically, and returns their paths.
func Render(dir string, t Thresholds, namespace string) ([]string, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	rules, err := RulesFile(t)
	if err != nil {
		return nil, err
	}
	pr, err := PrometheusRule(t, "imagectl", namespace)
	if err != nil {
		return nil, err
	}
	dash, err := DashboardJSON(t)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	var paths []string
	for _, f := range []struct {
		name string
		b    []byte
	}{{RulesFileName, rules}, {PrometheusRuleFileName, pr}, {DashboardFileName, dash}} {
		p := filepath.Join(dir, f.name)
		if err := atomicfile.Write(p, f.b, 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
