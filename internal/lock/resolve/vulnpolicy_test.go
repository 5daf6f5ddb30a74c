package resolve

import (
	"testing"

	"imagectl/internal/lock"
	"imagectl/internal/spec"
)

// The vulnerability gate is no lock input and is not locked: an allow-list
// edit neither stales the lock nor changes its content.
func TestVulnerabilityPolicyNotLocked(t *testing.T) {
	img := spec.Image{Name: "demo", Base: "registry.example/b:1", Python: "3.11"}
	before, err := InputsDigest(img)
	if err != nil {
		t.Fatal(err)
	}
	img.Policy.Vulnerabilities = &spec.VulnerabilityPolicy{MaxSeverity: "medium", Allow: []string{"CVE-2025-8869"}}
	if got, _ := InputsDigest(img); got != before {
		t.Errorf("InputsDigest with a vulnerabilities block = %s, want %s", got, before)
	}
	l := &lock.Lock{Name: "demo", Policy: img.Policy}
	l.Normalize()
	if l.Policy.Vulnerabilities != nil {
		t.Errorf("Normalize kept the vulnerability policy in the lock: %+v", l.Policy.Vulnerabilities)
	}
	if img.Policy.Vulnerabilities == nil {
		t.Error("Normalize cleared the spec image's policy too")
	}
}
