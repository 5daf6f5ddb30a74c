package monitoring

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// RuleGroup is a Prometheus rule group, as rule files and the
// PrometheusRule spec hold it.
type RuleGroup struct {
	Name  string `yaml:"name" json:"name"`
	Rules []Rule `yaml:"rules" json:"rules"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `yaml:"alert" json:"alert"`
	Expr        string            `yaml:"expr" json:"expr"`
	For         string            `yaml:"for,omitempty" json:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty" json:"annotations,omitempty"`
}

// The alerts, by name; docs/monitoring.md has a section for each (its
// anchor is the name in lower case).
const (
	AlertGPUHot             = "GPUHot"
	AlertGPUTemperatureCrit = "GPUTemperatureCritical"
	AlertGPUAllocatedIdle   = "GPUAllocatedIdle"
	AlertGPUFramebufferFull = "GPUFramebufferNearlyFull"
	AlertGPUXIDError        = "GPUXIDError"
	AlertReleaseStale       = "ImagectlReleaseStale"
	AlertReleaseFailed      = "ImagectlReleaseFailed"
	AlertRescanFailed       = "ImagectlRescanFailed"
	AlertRescanNotRun       = "ImagectlRescanNotRun"
	AlertNewFixableCritical = "ImagectlNewFixableCritical"
)

// The alerts' severity label values.
const (
	severityWarning = "warning"
	severityC       = "critical"
)

// Alerts returns every alert's name, in the order the rules list them.
func Alerts() []string {
	var out []string
	for _, g := range Rules(Defaults()) {
		for _, r := range g.Rules {
			out = append(out, r.Alert)
		}
	}
	return out
}

// humanAge writes an age for people: "35 days", "36h", else as Prometheus
// would.
func humanAge(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return promDuration(d)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func alert(name, expr string, for_ string, severity, summary, description string) Rule {
	return Rule{
		Alert:  name,
		Expr:   expr,
		For:    for_,
		Labels: map[string]string{"severity": severity},
		Annotations: map[string]string{
			"summary":     summary,
			"description": description,
			"runbook":     "docs/monitoring.md#" + lower(name),
		},
	}
}

func lower(s string) string { return string(bytes.ToLower([]byte(s))) }

// Rules returns the alerting rules for t: the GPU group over
// dcgm-exporter's metrics and the release group over imagectl's.
func Rules(t Thresholds) []RuleGroup {
	gpu := `GPU {{ $labels.gpu }} ({{ $labels.modelName }}) on {{ $labels.Hostname }}`
	return []RuleGroup{
		{Name: "imagectl-gpu", Rules: []Rule{
			alert(AlertGPUHot,
				fmt.Sprintf("%s > %s", DCGMGPUTemp, num(t.GPUHotCelsius)), promDuration(t.GPUHotFor), severityWarning,
				gpu+" runs hot",
				fmt.Sprintf("%s has been above %s C for %s: {{ $value }} C.", gpu, num(t.GPUHotCelsius), promDuration(t.GPUHotFor))),
			alert(AlertGPUTemperatureCrit,
				fmt.Sprintf("%s > %s", DCGMGPUTemp, num(t.GPUCriticalCelsius)), promDuration(t.GPUCriticalFor), severityC,
				gpu+" is close to thermal slowdown",
				fmt.Sprintf("%s has been above %s C for %s: {{ $value }} C.", gpu, num(t.GPUCriticalCelsius), promDuration(t.GPUCriticalFor))),
			alert(AlertGPUAllocatedIdle,
				fmt.Sprintf("%s < %s and %s > %s", DCGMGPUUtil, num(t.GPUIdlePercent), DCGMFBUsed, num(t.GPUIdleMemoryMiB)),
				promDuration(t.GPUIdleFor), severityWarning,
				gpu+" is allocated but idle",
				fmt.Sprintf("%s has been below %s %% utilization with more than %s MiB of memory in use for %s (pod {{ $labels.namespace }}/{{ $labels.pod }}).",
					gpu, num(t.GPUIdlePercent), num(t.GPUIdleMemoryMiB), promDuration(t.GPUIdleFor))),
			alert(AlertGPUFramebufferFull,
				fmt.Sprintf("%s / (%s + %s) > %s", DCGMFBUsed, DCGMFBUsed, DCGMFBFree, num(t.FramebufferFullRatio)),
				promDuration(t.FramebufferFullFor), severityWarning,
				gpu+" memory is nearly full",
				fmt.Sprintf("%s has used more than %s of its framebuffer for %s: {{ $value | humanizePercentage }}.",
					gpu, num(t.FramebufferFullRatio), promDuration(t.FramebufferFullFor))),
			alert(AlertGPUXIDError,
				fmt.Sprintf("%s > 0", DCGMXIDErrors), "", severityC,
				gpu+" reported XID {{ $value }}",
				gpu+" reported XID error {{ $value }} (the last XID code dcgm-exporter saw); see NVIDIA's XID table for what the code means."),
		}},
		{Name: "imagectl-releases", Rules: []Rule{
			alert(AlertReleaseStale,
				fmt.Sprintf("time() - %s > %s", ReleaseTimestamp, num(t.ReleaseStaleAge.Seconds())), "", severityWarning,
				"{{ $labels.image }}'s newest release is stale",
				fmt.Sprintf("{{ $labels.image }} has had no successful release for more than %s (newest {{ $value | humanizeDuration }} ago).",
					humanAge(t.ReleaseStaleAge))),
			alert(AlertReleaseFailed,
				fmt.Sprintf("%s == 0", ReleaseSuccess), "", severityWarning,
				"{{ $labels.image }}'s release failed at {{ $labels.failed_stage }}",
				"The last release run of {{ $labels.image }} stopped at stage {{ $labels.failed_stage }}; its previous release stays promoted."),
			alert(AlertRescanFailed,
				fmt.Sprintf("%s == 0", RescanSuccess), "", severityWarning,
				"the daily re-scan failed",
				"The last daily re-scan (imagectl scan releases) stopped on an error: the released digests after it were not scanned."),
			alert(AlertRescanNotRun,
				fmt.Sprintf("time() - %s > %s", RescanTimestamp, num(t.RescanStaleAge.Seconds())), "", severityWarning,
				"the daily re-scan has not run",
				fmt.Sprintf("The daily re-scan last ended {{ $value | humanizeDuration }} ago (more than %s).", humanAge(t.RescanStaleAge))),
			alert(AlertNewFixableCritical,
				fmt.Sprintf(`sum by (image, month, platform, digest) (%s{severity="critical", fixable="true"}) > 0`, ScanNewFindings), "", severityC,
				"{{ $labels.image }} {{ $labels.month }} has a new fixable critical vulnerability",
				"The daily re-scan found {{ $value }} new critical finding(s) with a fixed version in {{ $labels.image }} {{ $labels.month }} ({{ $labels.digest }}{{ with $labels.platform }} {{ . }}{{ end }}): rebuild and promote."),
		}},
	}
}

// RulesFile is t's rules as a Prometheus rule file (promtool check rules
// reads it).
func RulesFile(t Thresholds) ([]byte, error) {
	return marshalYAML(struct {
		Groups []RuleGroup `yaml:"groups"`
	}{Rules(t)})
}

// PrometheusRule is t's rules as a Prometheus Operator PrometheusRule
// manifest named name in namespace (none when empty).
func PrometheusRule(t Thresholds, name, namespace string) ([]byte, error) {
	type meta struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels"`
	}
	return marshalYAML(struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   meta   `yaml:"metadata"`
		Spec       struct {
			Groups []RuleGroup `yaml:"groups"`
		} `yaml:"spec"`
	}{
		APIVersion: "monitoring.coreos.com/v1",
		Kind:       "PrometheusRule",
		Metadata:   meta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/name": "imagectl", "app.kubernetes.io/component": "alerting-rules"}},
		Spec: struct {
			Groups []RuleGroup `yaml:"groups"`
		}{Rules(t)},
	})
}

func marshalYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding yaml: %w", err)
	}
	return b.Bytes(), nil
}
