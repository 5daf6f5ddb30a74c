package promote_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/exitcode"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/scan/report"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
)

func (f *fixture) attestScan(d name.Digest, r *report.Result, k keys) {
	f.t.Helper()
	b, err := report.Predicate(r)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := sign.Attest(f.ctx, d, report.VulnPredicateType, b, k.opt()); err != nil {
		f.t.Fatal(err)
	}
}

func scanOf(d name.Digest, suppressJQ bool) *report.Result {
	now := time.Now().UTC()
	r := &report.Result{
		Image: d.String(), StartedOn: now, FinishedOn: now,
		DB: report.DBInfo{URI: "reg/platform/grype-db@sha256:" + strings.Repeat("e", 64), Built: now.Add(-time.Hour)},
		Findings: []report.Finding{
			{ID: "CVE-2026-32316", Package: "jq", Installed: "1.6-2.1+deb12u2", FixedIn: []string{"1.6-2.1+deb12u3"}, Severity: "high", Type: "deb"},
			{ID: "GHSA-mq26-g339-26xf", Aliases: []string{"CVE-2023-5752"}, Package: "pip", Installed: "23.0.1", FixedIn: []string{"23.3"}, Severity: "low", Type: "python"},
		},
	}
	if suppressJQ {
		r.Findings[0].Suppressed = &report.Suppression{Document: "images/demo/vex.json", Status: "not_affected", Justification: "vulnerable_code_not_in_execute_path"}
	}
	return r
}

// TestVulnerabilitiesGate: with a policy, promotion refuses (exit 5) a
// digest without a signed scan, one whose scan has a high fixable
// finding (naming the CVE, package and fix version), and one whose scan
// is signed by an untrusted key; a VEX-suppressed finding passes; an image
// without a policy is not gated.
func TestVulnerabilitiesGate(t *testing.T) {
	img := spec.Image{Name: "pytorch-2.6-cu124", Policy: spec.Policy{Vulnerabilities: &spec.VulnerabilityPolicy{FixableOnly: true}}}
	for _, tc := range []struct {
		name   string
		scan   func(f *fixture, d name.Digest)
		policy bool
		want   string // substring of the refusal; "" promotes
	}{
		{"no scan", func(*fixture, name.Digest) {}, true, "no signed vulnerability scan of this digest"},
		{"high fixable finding", func(f *fixture, d name.Digest) { f.attestScan(d, scanOf(d, false), f.signer) }, true,
			"CVE-2026-32316 (high) in jq 1.6-2.1+deb12u2, fixed in 1.6-2.1+deb12u3"},
		{"scan by another key", func(f *fixture, d name.Digest) { f.attestScan(d, scanOf(d, false), f.other) }, true, "no signed vulnerability scan"},
		{"suppressed by VEX", func(f *fixture, d name.Digest) { f.attestScan(d, scanOf(d, true), f.signer) }, true, ""},
		{"no policy", func(*fixture, name.Digest) {}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newInProcessRegistry(t))
			d := f.good()
			tc.scan(f, d)
			path := f.releaseFile(nil, releasefile.Release{Source: d.String(), Tags: []string{"2.6-cu124-2026.12"}, Month: "2026-12"})
			opts := f.opts(promote.WithConfirm(true))
			if tc.policy {
				opts = append(opts, promote.WithVulnerabilityPolicies(img))
			}
			_, err := promote.Run(f.ctx, path, opts...)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Run = %v, want promoted", err)
				}
				return
			}
			var re *promote.RefusedError
			if !errors.As(err, &re) || !re.Has(promote.GateVulnerabilities) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want a vulnerabilities refusal containing %q", err, tc.want)
			}
			if exitcode.Code(err) != exitcode.PromotionRefused {
				t.Errorf("exit code %d, want %d", exitcode.Code(err), exitcode.PromotionRefused)
			}
		})
	}
}
