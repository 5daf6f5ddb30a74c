package policy

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/verify/result"
)

// The subset of Kyverno's ClusterPolicy (kyverno.io/v1) that the rendered
// policy uses (github.com/kyverno/kyverno/api/kyverno/v1).
type clusterPolicy struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   metadata `yaml:"metadata"`
	Spec       kySpec   `yaml:"spec"`
}

type kySpec struct {
	Background            bool     `yaml:"background"`
	WebhookTimeoutSeconds int      `yaml:"webhookTimeoutSeconds"`
	FailurePolicy         string   `yaml:"failurePolicy"`
	Rules                 []kyRule `yaml:"rules"`
}

type kyRule struct {
	Name         string        `yaml:"name"`
	Match        kyMatch       `yaml:"match"`
	VerifyImages []verifyImage `yaml:"verifyImages"`
}

type kyMatch struct {
	Any []kyResourceFilter `yaml:"any"`
}

type kyResourceFilter struct {
	Resources kyResources `yaml:"resources"`
}

type kyResources struct {
	Kinds []string `yaml:"kinds"`
}

// verifyImage is one verifyImages entry: it checks signatures (Attestors)
// or attestations, so the policy has one of each.
type verifyImage struct {
	ImageReferences []string        `yaml:"imageReferences"`
	FailureAction   string          `yaml:"failureAction"`
	MutateDigest    bool            `yaml:"mutateDigest"`
	VerifyDigest    bool            `yaml:"verifyDigest"`
	Required        bool            `yaml:"required"`
	Attestors       []attestorSet   `yaml:"attestors,omitempty"`
	Attestations    []kyAttestation `yaml:"attestations,omitempty"`
}

type attestorSet struct {
	Count   int        `yaml:"count"`
	Entries []attestor `yaml:"entries"`
}

type attestor struct {
	Keys staticKey `yaml:"keys"`
}

type staticKey struct {
	PublicKeys         string `yaml:"publicKeys"`
	SignatureAlgorithm string `yaml:"signatureAlgorithm"`
	Rekor              rekor  `yaml:"rekor"`
	CTLog              ctlog  `yaml:"ctlog"`
}

type rekor struct {
	IgnoreTlog bool `yaml:"ignoreTlog"`
}

type ctlog struct {
	IgnoreSCT bool `yaml:"ignoreSCT"`
}

type kyAttestation struct {
	Type       string        `yaml:"type"`
	Attestors  []attestorSet `yaml:"attestors"`
	Conditions []anyAll      `yaml:"conditions"`
}

type anyAll struct {
	All []condition `yaml:"all"`
}

type condition struct {
	Key      string `yaml:"key"`
	Operator string `yaml:"operator"`
	Value    string `yaml:"value"`
	Message  string `yaml:"message"`
}

// The verifyImages entries' failure messages name what was required, so
// that a refused pod says why.
func kyvernoPolicy(repos []name.Repository, o *options) clusterPolicy {
	var refs []string
	for _, r := range repos {
		refs = append(refs, imagePatterns(r)...)
	}
	by := func(pem []byte) []attestorSet {
		return []attestorSet{{Count: 1, Entries: []attestor{{Keys: staticKey{
			PublicKeys: string(pem), SignatureAlgorithm: "sha256",
			Rekor: rekor{IgnoreTlog: true}, CTLog: ctlog{IgnoreSCT: true},
		}}}}}
	}
	entry := func() verifyImage {
		// The digest is what is signed: a pod naming a tag gets it
		// resolved and pinned (mutateDigest), then verified.
		return verifyImage{ImageReferences: refs, FailureAction: "Enforce", MutateDigest: true, VerifyDigest: true, Required: true}
	}
	sig := entry()
	sig.Attestors = by(o.key)
	ver := entry()
	ver.Attestations = []kyAttestation{{
		Type:      result.TestResultPredicateType,
		Attestors: by(o.verifierKey),
		Conditions: []anyAll{{All: []condition{{
			Key: "{{ result }}", Operator: "Equals", Value: result.TestResultPassed,
			Message: fmt.Sprintf("imagectl release policy: the verifier's test-result attestation says {{ result }}, want %s", result.TestResultPassed),
		}}}},
	}}
	if o.vulnMaxAge > 0 {
		ver.Attestations = append(ver.Attestations, kyAttestation{
			Type:      VulnPredicateType,
			Attestors: by(o.key),
			Conditions: []anyAll{{All: []condition{{
				Key:      "{{ time_since('', '{{ metadata.scanFinishedOn }}', '') }}",
				Operator: "LessThanOrEquals", Value: shortDuration(o.vulnMaxAge),
				Message: fmt.Sprintf("imagectl release policy: the vulnerability scan finished {{ metadata.scanFinishedOn }}, more than %s ago", shortDuration(o.vulnMaxAge)),
			}}}},
		})
	}
	return clusterPolicy{
		APIVersion: "kyverno.io/v1",
		Kind:       "ClusterPolicy",
		Metadata: metadata{Name: o.name, Annotations: map[string]string{
			"policies.kyverno.io/title":       "imagectl release images",
			"policies.kyverno.io/subject":     "Pod",
			"policies.kyverno.io/description": "Admits an image of the release repositories only when the signer key signed its digest and the verifier key attested a PASSED in-toto test result for it (imagectl policy render).",
		}},
		Spec: kySpec{
			Background:            false,
			WebhookTimeoutSeconds: 30,
			FailurePolicy:         "Fail",
			Rules: []kyRule{{
				Name:         "verify-release-images",
				Match:        kyMatch{Any: []kyResourceFilter{{Resources: kyResources{Kinds: []string{"Pod"}}}}},
				VerifyImages: []verifyImage{sig, ver},
			}},
		},
	}
}
