package promote_test

import (
	"errors"
	"strings"
	"testing"

	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/spec"
)

// TestVulnerabilitiesGateIndex: with a policy, an image index is gated on
// the signed scan of each platform image (which carries the SBOM): none
// refuses naming both platforms; a high fixable finding on arm64 alone
// refuses naming that platform's image and the CVE, not amd64; a scan
// attested on the index instead of its images does not count; clean
// scans of both promote.
func TestVulnerabilitiesGateIndex(t *testing.T) {
	f := newFixture(t, newInProcessRegistry(t))
	src, children := f.twoPlatformIndex()
	amd, arm := children["linux/amd64"], children["linux/arm64"]
	for _, c := range children {
		f.attestVerification(c, f.passing(c), f.ver)
	}
	img := spec.Image{Name: f.lock.Name, Policy: spec.Policy{Vulnerabilities: &spec.VulnerabilityPolicy{FixableOnly: true}}}
	path := f.releaseFile(nil, releasefile.Release{Source: src.String(), Month: "2026-12", Tags: []string{"2.6-2026.12"}})
	run := func() error {
		_, err := promote.Run(f.ctx, path, f.opts(promote.WithConfirm(true), promote.WithVulnerabilityPolicies(img))...)
		return err
	}
	refused := func(err error, want []string, not ...string) {
		t.Helper()
		var re *promote.RefusedError
		if !errors.As(err, &re) || !re.Has(promote.GateVulnerabilities) {
			t.Fatalf("Run = %v, want a vulnerabilities refusal", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("refusal %q does not name %q", err, w)
			}
		}
		for _, n := range not {
			if strings.Contains(err.Error(), n) {
				t.Errorf("refusal %q names %q", err, n)
			}
		}
	}

	f.attestScan(src, scanOf(src, true), f.signer) // on the index: not what the gate reads
	refused(run(), []string{
		"the linux/amd64 image " + amd.DigestStr() + ": no signed vulnerability scan",
		"the linux/arm64 image " + arm.DigestStr() + ": no signed vulnerability scan",
	})

	f.attestScan(amd, scanOf(amd, true), f.signer)
	f.attestScan(arm, scanOf(arm, false), f.signer)
	refused(run(), []string{"the linux/arm64 image " + arm.DigestStr() + ": CVE-2026-32316 (high) in jq 1.6-2.1+deb12u2, fixed in 1.6-2.1+deb12u3"}, "linux/amd64")

	f.attestScan(arm, scanOf(arm, true), f.signer)
	if err := run(); err != nil {
		t.Fatalf("Run(both platform images scanned within the policy) = %v", err)
	}
}
