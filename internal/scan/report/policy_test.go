package report

import (
	"strings"
	"testing"
	"time"
)

func result() *Result {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	return &Result{
		Image:     "reg/demo@sha256:aa",
		StartedOn: now,
		DB:        DBInfo{URI: "reg/db@sha256:bb", Built: now.Add(-24 * time.Hour)},
		Findings: []Finding{
			{ID: "CVE-2026-32316", Package: "jq", Installed: "1.6-2.1+deb12u2", FixedIn: []string{"1.6-2.1+deb12u3"}, Severity: "high"},
			{ID: "GHSA-4xh5-x5gv-qwph", Aliases: []string{"CVE-2025-8869"}, Package: "pip", Installed: "23.0.1", FixedIn: []string{"25.3"}, Severity: "medium"},
			{ID: "CVE-2016-2781", Package: "coreutils", Installed: "9.1-1", Severity: "high"},
		},
	}
}

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(*Result)
		policy Policy
		want   []string // one substring per violation, in order
	}{
		{"high gate", nil, Policy{MaxSeverity: "high"},
			[]string{"CVE-2026-32316 (high) in jq 1.6-2.1+deb12u2, fixed in 1.6-2.1+deb12u3", "CVE-2016-2781 (high) in coreutils 9.1-1, no fix known"}},
		{"fixable only", nil, Policy{MaxSeverity: "high", FixableOnly: true},
			[]string{"CVE-2026-32316"}},
		{"medium gate", nil, Policy{MaxSeverity: "medium", FixableOnly: true},
			[]string{"CVE-2026-32316", "GHSA-4xh5-x5gv-qwph (medium) in pip 23.0.1, fixed in 25.3"}},
		{"allowed by alias, unfixed", nil, Policy{MaxSeverity: "high", Allow: []string{"CVE-2016-2781"}},
			[]string{"CVE-2026-32316"}},
		{"allow entry become fixable", nil, Policy{MaxSeverity: "critical", Allow: []string{"CVE-2025-8869"}},
			[]string{"allow entry CVE-2025-8869 is outdated: GHSA-4xh5-x5gv-qwph in pip 23.0.1 has become fixable (fixed in 25.3)"}},
		{"allow entry matching nothing", nil, Policy{MaxSeverity: "critical", Allow: []string{"CVE-2020-0001"}},
			[]string{"allow entry CVE-2020-0001 is outdated: it matches no finding"}},
		{"suppressed by VEX", func(r *Result) { r.Findings[0].Suppressed = &Suppression{Status: "not_affected"} }, Policy{MaxSeverity: "high", FixableOnly: true},
			nil},
		{"stale database", func(r *Result) { r.DB.Built = r.StartedOn.Add(-6 * 24 * time.Hour) }, Policy{MaxSeverity: "critical", MaxDBAge: 120 * time.Hour},
			[]string{"built 2026-11-25T00:00:00Z, 144h0m0s before the scan: older than the limit 120h0m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := result()
			if tc.edit != nil {
				tc.edit(r)
			}
			got := Evaluate(r, tc.policy)
			if len(got) != len(tc.want) {
				t.Fatalf("Evaluate = %v, want %d violations %v", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Reason, w) {
					t.Errorf("violation %d = %q, want it to contain %q", i, got[i].Reason, w)
				}
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := (Policy{MaxSeverity: "severe"}).Validate(); err == nil {
		t.Error(`Validate(max_severity "severe") = nil, want an error`)
	}
	if err := (Policy{MaxSeverity: "high"}).Validate(); err != nil {
		t.Errorf("Validate(high) = %v", err)
	}
}
