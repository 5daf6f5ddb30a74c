package policy

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/verify/result"
)

// The subset of policy-controller's ClusterImagePolicy (v1beta1) that the
// rendered policy uses, in its field order
// (github.com/sigstore/policy-controller/pkg/apis/policy/v1beta1).
type cip struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   metadata `yaml:"metadata"`
	Spec       cipSpec  `yaml:"spec"`
}

type metadata struct {
	Name        string            `yaml:"name"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

type cipSpec struct {
	Mode        string         `yaml:"mode"`
	Images      []imagePattern `yaml:"images"`
	Authorities []authority    `yaml:"authorities"`
	// Policy is the policy over all authorities' matches: authorities are
	// alternatives, so it is what requires every one of them.
	Policy *cipPolicy `yaml:"policy,omitempty"`
}

type imagePattern struct {
	Glob string `yaml:"glob"`
}

type authority struct {
	Name         string        `yaml:"name"`
	Key          keyRef        `yaml:"key"`
	Attestations []attestation `yaml:"attestations,omitempty"`
}

type keyRef struct {
	HashAlgorithm string `yaml:"hashAlgorithm"`
	Data          string `yaml:"data"`
}

type attestation struct {
	Name          string     `yaml:"name"`
	PredicateType string     `yaml:"predicateType"`
	Policy        *cipPolicy `yaml:"policy,omitempty"`
}

type cipPolicy struct {
	Type string `yaml:"type"`
	Data string `yaml:"data"`
}

// The authority names of the rendered ClusterImagePolicy; its spec.policy
// requires each of them to have matched.
const (
	authSignature    = "signature"
	authVerification = "verification"
	authVulnScan     = "vuln-scan"
)

func clusterImagePolicy(repos []name.Repository, o *options) cip {
	var images []imagePattern
	for _, r := range repos {
		for _, p := range imagePatterns(r) {
			images = append(images, imagePattern{Glob: p})
		}
	}
	key := func(pem []byte) keyRef { return keyRef{HashAlgorithm: "sha256", Data: string(pem)} }
	auths := []authority{
		{Name: authSignature, Key: key(o.key)},
		{Name: authVerification, Key: key(o.verifierKey), Attestations: []attestation{{
			Name:          "test-result",
			PredicateType: result.TestResultPredicateType,
			Policy:        &cipPolicy{Type: "cue", Data: testResultCUE},
		}}},
	}
	required := []string{authSignature, authVerification}
	if o.vulnMaxAge > 0 {
		auths = append(auths, authority{Name: authVulnScan, Key: key(o.key), Attestations: []attestation{{
			Name:          "vuln",
			PredicateType: VulnPredicateType,
			Policy:        &cipPolicy{Type: "rego", Data: vulnRego(o.vulnMaxAge.Nanoseconds(), shortDuration(o.vulnMaxAge))},
		}}})
		required = append(required, authVulnScan)
	}
	return cip{
		APIVersion: "policy.sigstore.dev/v1beta1",
		Kind:       "ClusterImagePolicy",
		Metadata:   metadata{Name: o.name},
		Spec: cipSpec{
			Mode:        "enforce",
			Images:      images,
			Authorities: auths,
			Policy:      &cipPolicy{Type: "rego", Data: allAuthoritiesRego(required)},
		},
	}
}

// testResultCUE is unified with the whole in-toto statement of each
// test-result attestation the verifier key signed for the digest: a result
// other than PASSED conflicts, and policy-controller names the conflict.
var testResultCUE = fmt.Sprintf(`predicateType: %q
predicate: result: %q
`, result.TestResultPredicateType, result.TestResultPassed)

// allAuthoritiesRego is the ClusterImagePolicy-level policy: every
// required authority matched (policy-controller admits on any one of them
// otherwise), and its error names the ones that did not.
func allAuthoritiesRego(required []string) string {
	q := make([]string, len(required))
	for i, r := range required {
		q[i] = fmt.Sprintf("%q", r)
	}
	return fmt.Sprintf(`package sigstore

required := [%s]

missing := [a | a := required[_]; not input.authorityMatches[a]]

isCompliant[response] {
  response := {
    "result": count(missing) == 0,
    "warning": "",
    "error": sprintf("imagectl release policy: these authorities did not match: %%v (signature: a cosign signature by the signer key; verification: a PASSED test-result attestation by the verifier key; vuln-scan: a recent vulnerability attestation by the signer key)", [missing]),
  }
}
`, strings.Join(q, ", "))
}

// vulnRego checks the age of a cosign vuln attestation's scan: finished at
// most maxNS nanoseconds ago.
func vulnRego(maxNS int64, maxAge string) string {
	return fmt.Sprintf(`package sigstore

max_age_ns := %d

finished_ns := time.parse_rfc3339_ns(input.predicate.metadata.scanFinishedOn)

isCompliant[response] {
  age_ns := time.now_ns() - finished_ns
  response := {
    "result": age_ns <= max_age_ns,
    "warning": "",
    "error": sprintf("the vulnerability scan finished at %%s, more than %s ago", [input.predicate.metadata.scanFinishedOn]),
  }
}

isCompliant[response] {
  not finished_ns
  response := {
    "result": false,
    "warning": "",
    "error": "the vulnerability attestation has no RFC 3339 predicate.metadata.scanFinishedOn",
  }
}
`, maxNS, maxAge)
}
