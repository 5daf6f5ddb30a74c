package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"imagectl/internal/spec"
)

// DefaultMaxDBAge is the oldest database a scan accepts by default:
// grype's own limit (5 days).
const DefaultMaxDBAge = 120 * time.Hour

// Policy is the vulnerability policy of an image (the spec's
// policy { vulnerabilities { ... } }).
type Policy struct {
	// MaxSeverity is the gate: a finding of this severity or above refuses
	// (critical, high, medium, low, negligible), like grype --fail-on.
	MaxSeverity string
	// FixableOnly: only findings with a known fixed version refuse.
	FixableOnly bool
	// Allow lists vulnerability IDs (CVE-..., GHSA-..., matched with
	// aliases) that do not refuse. An entry that matches no finding, or
	// whose finding has become fixable, is outdated and refuses.
	Allow []string
	// MaxDBAge is the oldest database (at scan time) a result may come from.
	MaxDBAge time.Duration
}

// Violation is one reason a result breaks the policy.
type Violation struct {
	// Kind is "finding", "outdated-allow" or "stale-db".
	Kind    string   `json:"kind"`
	ID      string   `json:"id,omitempty"`
	Package string   `json:"package,omitempty"`
	Version string   `json:"installed,omitempty"`
	FixedIn []string `json:"fixedIn,omitempty"`
	// Severity of the finding.
	Severity string `json:"severity,omitempty"`
	Reason   string `json:"reason"`
}

func (v Violation) String() string { return v.Reason }

// Validate checks p's fields.
func (p Policy) Validate() error {
	if SeverityRank(p.MaxSeverity) < 1 {
		return fmt.Errorf("max_severity %q: want one of critical, high, medium, low, negligible", p.MaxSeverity)
	}
	return nil
}

// Evaluate returns every way r breaks p: findings at or above
// MaxSeverity (fixable ones only with FixableOnly) that no allow entry
// covers, allow entries that are outdated, and a database older than
// MaxDBAge when the scan ran. Findings a VEX statement suppressed never
// refuse.
func Evaluate(r *Result, p Policy) []Violation {
	var out []Violation
	if p.MaxDBAge > 0 {
		if age := r.StartedOn.Sub(r.DB.Built); age > p.MaxDBAge {
			out = append(out, Violation{Kind: "stale-db", Reason: fmt.Sprintf("the scan of %s used database %s built %s, %s before the scan: older than the limit %s",
				r.Image, r.DB.URI, r.DB.Built.UTC().Format(time.RFC3339), age.Round(time.Minute), p.MaxDBAge)})
		}
	}
	gate := SeverityRank(p.MaxSeverity)
	allowUsed := map[string]bool{}
	for _, f := range r.Findings {
		if f.Suppressed != nil {
			continue
		}
		allowed := ""
		for _, a := range p.Allow {
			if slices.ContainsFunc(f.Names(), func(n string) bool { return strings.EqualFold(n, a) }) {
				allowed = a
			}
		}
		if allowed != "" {
			allowUsed[strings.ToUpper(allowed)] = true
			if f.Fixable() {
				out = append(out, Violation{Kind: "outdated-allow", ID: f.ID, Package: f.Package, Version: f.Installed, FixedIn: f.FixedIn, Severity: f.Severity,
					Reason: fmt.Sprintf("allow entry %s is outdated: %s in %s %s has become fixable (fixed in %s): upgrade it and drop the entry", allowed, f.ID, f.Package, f.Installed, strings.Join(f.FixedIn, ", "))})
			}
			continue
		}
		if SeverityRank(f.Severity) < gate || (p.FixableOnly && !f.Fixable()) {
			continue
		}
		fix := "no fix known"
		if f.Fixable() {
			fix = "fixed in " + strings.Join(f.FixedIn, ", ")
		}
		out = append(out, Violation{Kind: "finding", ID: f.ID, Package: f.Package, Version: f.Installed, FixedIn: f.FixedIn, Severity: f.Severity,
			Reason: fmt.Sprintf("%s (%s) in %s %s, %s", f.ID, f.Severity, f.Package, f.Installed, fix)})
	}
	for _, a := range p.Allow {
		if !allowUsed[strings.ToUpper(a)] {
			out = append(out, Violation{Kind: "outdated-allow", ID: a,
				Reason: fmt.Sprintf("allow entry %s is outdated: it matches no finding of the scan any more; drop it", a)})
		}
	}
	return out
}

// PolicyOf is the vulnerability policy (promotion's gate, the re-scan's verdict) from the spec's block, defaults filled in
// (max_severity "high", max_db_age 120h).
func PolicyOf(v *spec.VulnerabilityPolicy) Policy {
	p := Policy{MaxSeverity: v.MaxSeverity, FixableOnly: v.FixableOnly, Allow: v.Allow, MaxDBAge: time.Duration(v.MaxDBAge)}
	if p.MaxSeverity == "" {
		p.MaxSeverity = "high"
	}
	if p.MaxDBAge <= 0 {
		p.MaxDBAge = DefaultMaxDBAge
	}
	return p
}
