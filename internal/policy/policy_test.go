package policy

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/yaml"

	"imagectl/internal/spec"
	"imagectl/internal/verify"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	signerPub   = "testdata/signer.pub"
	verifierPub = "testdata/verifier.pub"
)

func repos(t *testing.T, rs ...string) []name.Repository {
	t.Helper()
	out, err := ParseRepositories(rs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pem(t *testing.T, path string) string {
	t.Helper()
	b, err := readPublicKey("test", path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRenderGolden: the rendered YAML of each format, with and without the
// vulnerability attestation, is the reviewed one in testdata/.
func TestRenderGolden(t *testing.T) {
	rs := repos(t, "registry.example/ml/pytorch", "127.0.0.1:5000/imagectl/demo")
	for _, tc := range []struct {
		golden string
		format Format
		opts   []Option
	}{
		{"policy-controller.yaml", PolicyController, nil},
		{"policy-controller-vuln.yaml", PolicyController, []Option{WithVulnMaxAge(48 * time.Hour)}},
		{"kyverno.yaml", Kyverno, nil},
		{"kyverno-vuln.yaml", Kyverno, []Option{WithVulnMaxAge(48 * time.Hour)}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			got, err := Render(tc.format, rs, append([]Option{WithKeyFile(signerPub), WithVerifierKeyFile(verifierPub)}, tc.opts...)...)
			if err != nil {
				t.Fatalf("Render(%s) error = %v", tc.format, err)
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("Render(%s) differs from %s (-want +got):\n%s", tc.format, path, d)
			}
		})
	}
}

// TestRenderClusterImagePolicy reads the policy back as YAML and checks
// what it requires: the signer's signature, the verifier's PASSED test
// result, all authorities at once, for exactly the release repositories.
func TestRenderClusterImagePolicy(t *testing.T) {
	rs := repos(t, "127.0.0.1:5000/imagectl/demo")
	b, err := Render(PolicyController, rs, WithKeyFile(signerPub), WithVerifierKeyFile(verifierPub), WithVulnMaxAge(time.Hour), WithName("ml-release"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Mode        string
			Images      []struct{ Glob string }
			Authorities []struct {
				Name string
				Key  struct {
					Data          string
					HashAlgorithm string
				}
				Attestations []struct {
					Name          string
					PredicateType string
					Policy        struct{ Type, Data string }
				}
			}
			Policy struct{ Type, Data string }
		}
	}
	if err := yaml.UnmarshalStrict(b, &got); err != nil {
		t.Fatalf("rendered ClusterImagePolicy does not read back: %v\n%s", err, b)
	}
	if got.APIVersion != "policy.sigstore.dev/v1beta1" || got.Kind != "ClusterImagePolicy" || got.Metadata.Name != "ml-release" || got.Spec.Mode != "enforce" {
		t.Errorf("header = %s %s %q mode %q", got.APIVersion, got.Kind, got.Metadata.Name, got.Spec.Mode)
	}
	var globs []string
	for _, g := range got.Spec.Images {
		globs = append(globs, g.Glob)
	}
	if d := cmp.Diff([]string{"127.0.0.1:5000/imagectl/demo", "127.0.0.1:5000/imagectl/demo@*", "127.0.0.1:5000/imagectl/demo:*"}, globs); d != "" {
		t.Errorf("images (-want +got):\n%s", d)
	}
	if n := len(got.Spec.Authorities); n != 3 {
		t.Fatalf("%d authorities, want signature, verification, vuln-scan", n)
	}
	sig, ver, vuln := got.Spec.Authorities[0], got.Spec.Authorities[1], got.Spec.Authorities[2]
	if sig.Name != authSignature || sig.Key.Data != pem(t, signerPub) || len(sig.Attestations) != 0 {
		t.Errorf("signature authority = %+v, want the signer key and no attestations", sig)
	}
	if ver.Name != authVerification || ver.Key.Data != pem(t, verifierPub) || len(ver.Attestations) != 1 ||
		ver.Attestations[0].PredicateType != verify.TestResultPredicateType || ver.Attestations[0].Policy.Type != "cue" ||
		!strings.Contains(ver.Attestations[0].Policy.Data, `result: "PASSED"`) {
		t.Errorf("verification authority = %+v, want the verifier key and a PASSED test-result", ver)
	}
	if vuln.Name != authVulnScan || vuln.Key.Data != pem(t, signerPub) || len(vuln.Attestations) != 1 ||
		vuln.Attestations[0].PredicateType != VulnPredicateType || !strings.Contains(vuln.Attestations[0].Policy.Data, "max_age_ns := 3600000000000") {
		t.Errorf("vuln-scan authority = %+v, want the signer key, the vuln predicate and a 1h limit", vuln)
	}
	if got.Spec.Policy.Type != "rego" || !strings.Contains(got.Spec.Policy.Data, `required := ["signature", "verification", "vuln-scan"]`) {
		t.Errorf("spec.policy = %+v, want rego requiring every authority", got.Spec.Policy)
	}
}

// TestRenderKyverno: two verifyImages entries, one for the signer's
// signature and one for the verifier's PASSED test result, both enforced,
// required, and pinned to digests.
func TestRenderKyverno(t *testing.T) {
	rs := repos(t, "127.0.0.1:5000/imagectl/demo", "registry.example/ml/pytorch")
	b, err := Render(Kyverno, rs, WithKeyFile(signerPub), WithVerifierKeyFile(verifierPub))
	if err != nil {
		t.Fatal(err)
	}
	type keys struct {
		PublicKeys         string `json:"publicKeys"`
		SignatureAlgorithm string `json:"signatureAlgorithm"`
		Rekor              struct {
			IgnoreTlog bool `json:"ignoreTlog"`
		} `json:"rekor"`
		CTLog struct {
			IgnoreSCT bool `json:"ignoreSCT"`
		} `json:"ctlog"`
	}
	type attestors []struct {
		Count   int
		Entries []struct{ Keys keys }
	}
	var got struct {
		APIVersion string `json:"apiVersion"`
		Kind       string
		Metadata   struct {
			Name        string
			Annotations map[string]string
		}
		Spec struct {
			Background            bool
			WebhookTimeoutSeconds int    `json:"webhookTimeoutSeconds"`
			FailurePolicy         string `json:"failurePolicy"`
			Rules                 []struct {
				Name  string
				Match struct {
					Any []struct{ Resources struct{ Kinds []string } }
				}
				VerifyImages []struct {
					ImageReferences []string `json:"imageReferences"`
					FailureAction   string   `json:"failureAction"`
					MutateDigest    bool     `json:"mutateDigest"`
					VerifyDigest    bool     `json:"verifyDigest"`
					Required        bool
					Attestors       attestors
					Attestations    []struct {
						Type       string
						Attestors  attestors
						Conditions []struct {
							All []struct{ Key, Operator, Value, Message string }
						}
					}
				} `json:"verifyImages"`
			}
		}
	}
	if err := yaml.UnmarshalStrict(b, &got); err != nil {
		t.Fatalf("rendered ClusterPolicy does not read back: %v\n%s", err, b)
	}
	if got.APIVersion != "kyverno.io/v1" || got.Kind != "ClusterPolicy" || got.Metadata.Name != DefaultName || got.Spec.FailurePolicy != "Fail" || got.Spec.Background {
		t.Errorf("header = %s %s %q failurePolicy %q background %v", got.APIVersion, got.Kind, got.Metadata.Name, got.Spec.FailurePolicy, got.Spec.Background)
	}
	if len(got.Spec.Rules) != 1 || len(got.Spec.Rules[0].VerifyImages) != 2 {
		t.Fatalf("want one rule with two verifyImages entries:\n%s", b)
	}
	r := got.Spec.Rules[0]
	if len(r.Match.Any) != 1 || !cmp.Equal(r.Match.Any[0].Resources.Kinds, []string{"Pod"}) {
		t.Errorf("rule matches %+v, want Pods", r.Match)
	}
	wantRefs := []string{"127.0.0.1:5000/imagectl/demo", "127.0.0.1:5000/imagectl/demo@*", "127.0.0.1:5000/imagectl/demo:*",
		"registry.example/ml/pytorch", "registry.example/ml/pytorch@*", "registry.example/ml/pytorch:*"}
	keyOnly := func(a attestors, pub string) bool {
		if len(a) != 1 || a[0].Count != 1 || len(a[0].Entries) != 1 {
			return false
		}
		k := a[0].Entries[0].Keys
		return k.PublicKeys == pem(t, pub) && k.SignatureAlgorithm == "sha256" && k.Rekor.IgnoreTlog && k.CTLog.IgnoreSCT
	}
	for i, vi := range r.VerifyImages {
		if d := cmp.Diff(wantRefs, vi.ImageReferences); d != "" {
			t.Errorf("verifyImages[%d] imageReferences (-want +got):\n%s", i, d)
		}
		if vi.FailureAction != "Enforce" || !vi.Required || !vi.VerifyDigest || !vi.MutateDigest {
			t.Errorf("verifyImages[%d] = action %q required %v verifyDigest %v mutateDigest %v, want Enforce and all true", i, vi.FailureAction, vi.Required, vi.VerifyDigest, vi.MutateDigest)
		}
	}
	sig, ver := r.VerifyImages[0], r.VerifyImages[1]
	if !keyOnly(sig.Attestors, signerPub) || len(sig.Attestations) != 0 {
		t.Errorf("verifyImages[0] = %+v, want the signer key's signature only", sig)
	}
	if len(ver.Attestors) != 0 || len(ver.Attestations) != 1 {
		t.Fatalf("verifyImages[1] = %+v, want one attestation and no signature check", ver)
	}
	a := ver.Attestations[0]
	if a.Type != verify.TestResultPredicateType || !keyOnly(a.Attestors, verifierPub) || len(a.Conditions) != 1 || len(a.Conditions[0].All) != 1 {
		t.Fatalf("test-result attestation = %+v", a)
	}
	if c := a.Conditions[0].All[0]; c.Key != "{{ result }}" || c.Operator != "Equals" || c.Value != "PASSED" || c.Message == "" {
		t.Errorf("test-result condition = %+v, want {{ result }} Equals PASSED with a message", c)
	}
}

func TestRenderErrors(t *testing.T) {
	dir := t.TempDir()
	notKey := filepath.Join(dir, "cosign.key")
	if err := os.WriteFile(notKey, []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := repos(t, "127.0.0.1:5000/imagectl/demo")
	keys := []Option{WithKeyFile(signerPub), WithVerifierKeyFile(verifierPub)}
	for _, tc := range []struct {
		name   string
		format Format
		repos  []name.Repository
		opts   []Option
		want   string
	}{
		{"no keys", Kyverno, rs, nil, ErrNoKey.Error()},
		{"no verifier key", Kyverno, rs, []Option{WithKeyFile(signerPub)}, ErrNoKey.Error()},
		{"missing key file", Kyverno, rs, []Option{WithKeyFile(filepath.Join(dir, "nope.pub"))}, "nope.pub"},
		{"private key", PolicyController, rs, []Option{WithVerifierKeyFile(notKey)}, "the verifier public key " + notKey},
		{"no repositories", PolicyController, nil, keys, "at least one release repository"},
		{"unknown format", Format("opa"), rs, keys, `unknown policy format "opa"`},
		{"bad name", Kyverno, rs, append(keys, WithName("Not_A_Name")), `policy name "Not_A_Name"`},
		{"negative age", Kyverno, rs, append(keys, WithVulnMaxAge(-time.Hour)), "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.format, tc.repos, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Render(Kyverno, rs); !errors.Is(err, ErrNoKey) {
		t.Errorf("Render() without keys = %v, want ErrNoKey", err)
	}
}

func TestReleaseRepositories(t *testing.T) {
	src := []byte(`
image "b" {
  base = "127.0.0.1:5000/imagectl/debian-base:bookworm"
  python = "3.11"
  repos {
    staging = "127.0.0.1:5000/staging/b"
    release = "127.0.0.1:5000/ml/b"
  }
}
image "a" {
  base = "127.0.0.1:5000/imagectl/debian-base:bookworm"
  python = "3.11"
  repos {
    staging = "127.0.0.1:5000/staging/a"
    release = "127.0.0.1:5000/ml/a"
  }
}
image "a2" {
  base = "127.0.0.1:5000/imagectl/debian-base:bookworm"
  python = "3.11"
  repos {
    staging = "127.0.0.1:5000/staging/a"
    release = "127.0.0.1:5000/ml/a"
  }
}
`)
	imgs, err := spec.LoadSource(context.Background(), "specs/ml.hcl", src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReleaseRepositories(imgs)
	if err != nil {
		t.Fatalf("ReleaseRepositories() error = %v", err)
	}
	if d := cmp.Diff([]string{"127.0.0.1:5000/ml/a", "127.0.0.1:5000/ml/b"}, repoNames(got)); d != "" {
		t.Errorf("ReleaseRepositories() (-want +got):\n%s", d)
	}
	noRelease := imgs[0]
	noRelease.Repos.Release = ""
	if _, err := ReleaseRepositories([]spec.Image{noRelease}); err == nil || !strings.Contains(err.Error(), `specs/ml.hcl:`) || !strings.Contains(err.Error(), `image "b" has no repos.release`) {
		t.Errorf("ReleaseRepositories() of an image without repos.release = %v, want an error naming the file and image", err)
	}
	bad := imgs[0]
	bad.Repos.Release = "127.0.0.1:5000/ML/B:tag"
	if _, err := ReleaseRepositories([]spec.Image{bad}); err == nil || !strings.Contains(err.Error(), `image "b": repos.release`) {
		t.Errorf("ReleaseRepositories() of a malformed repository = %v, want an error naming the image", err)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{168 * time.Hour: "168h", 90 * time.Minute: "1h30m", 45 * time.Second: "45s", 30 * time.Minute: "30m", time.Hour + time.Second: "1h0m1s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
		if p, err := time.ParseDuration(shortDuration(d)); err != nil || p != d {
			t.Errorf("time.ParseDuration(%q) = %v, %v; want %v", shortDuration(d), p, err, d)
		}
	}
}
