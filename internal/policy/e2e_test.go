package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"imagectl/internal/auth"
	"imagectl/internal/policy"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

// keyPair is a cosign key pair made for one test, its private key opened
// once (each opening is a scrypt run).
type keyPair struct {
	pub string
	sv  signature.SignerVerifier
}

func newKeyPair(t *testing.T) keyPair {
	t.Helper()
	priv, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	sv, err := sign.LoadSigner(context.Background(), sign.WithKey(priv, []byte("pw")))
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{pub, sv}
}

func (k keyPair) opts(a *auth.Access) []sign.Option {
	return []sign.Option{sign.WithSigner(k.sv), sign.WithAccess(a)}
}

// release is the registry side of the engine tests: images pushed to one
// repository and signed or attested as each case needs.
type release struct {
	t        *testing.T
	ctx      context.Context
	access   *auth.Access
	repo     string
	signer   keyPair
	verifier keyPair
}

// push writes a small random image to the repository.
func (r *release) push() name.Digest {
	r.t.Helper()
	img, err := random.Image(1024, 1)
	if err != nil {
		r.t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		r.t.Fatal(err)
	}
	d, err := name.NewDigest(r.repo + "@" + h.String())
	if err != nil {
		r.t.Fatal(err)
	}
	if err := remote.Write(d, img, r.access.RemoteOptions()...); err != nil {
		r.t.Fatal(err)
	}
	return d
}

func (r *release) sign(d name.Digest, k keyPair) {
	r.t.Helper()
	if err := sign.Sign(r.ctx, d, k.opts(r.access)...); err != nil {
		r.t.Fatal(err)
	}
}

// verified attests a verification result of d with k, as imagectl verify
// does after a containerd run of the digest: imagectl's own attestation and
// the in-toto test-result one.
func (r *release) verified(d name.Digest, k keyPair, passed bool) {
	r.t.Helper()
	st := verify.Pass
	if !passed {
		st = verify.Fail
	}
	res := &verify.Result{Image: d.String(), Digest: d.DigestStr(), LockDigest: "sha256:" + strings.Repeat("3", 64),
		Runtime: "containerd", Proof: verify.ProofRuntime, Passed: passed,
		Checks:    []verify.Check{{Name: "torch.cuda", Status: verify.Pass}, {Name: "nccl.allreduce.busbw", Status: st}},
		StartedAt: time.Now().UTC().Truncate(time.Second), Duration: "41s"}
	if err := verify.Attest(r.ctx, d, res, k.opts(r.access)...); err != nil {
		r.t.Fatal(err)
	}
}

// scanned attests a cosign vuln predicate for d, its scan finished at
// finished, signed by the signer key.
func (r *release) scanned(d name.Digest, finished time.Time) {
	r.t.Helper()
	pred, err := json.Marshal(map[string]any{
		"invocation": map[string]any{"uri": "", "event_id": "", "builder.id": ""},
		"scanner": map[string]any{"uri": "pkg:golang/github.com/anchore/grype@v0.121.2", "version": "v0.121.2",
			"db": map[string]any{"uri": "oci://registry.example/grype-db:v6", "version": "v6"}, "result": map[string]any{"matches": []any{}}},
		"metadata": map[string]any{"scanStartedOn": finished.Add(-3 * time.Second).UTC().Format(time.RFC3339),
			"scanFinishedOn": finished.UTC().Format(time.RFC3339)},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := sign.Attest(r.ctx, d, policy.VulnPredicateType, pred, r.signer.opts(r.access)...); err != nil {
		r.t.Fatal(err)
	}
}

// replay copies the attestations of from (its sha256-<hex>.att manifest,
// signed by the verifier for from's digest) to to's attestation tag.
func (r *release) replay(from, to name.Digest) {
	r.t.Helper()
	tag := func(d name.Digest) name.Tag {
		t, err := name.NewTag(r.repo + ":" + strings.Replace(d.DigestStr(), ":", "-", 1) + ".att")
		if err != nil {
			r.t.Fatal(err)
		}
		return t
	}
	att, err := remote.Image(tag(from), r.access.RemoteOptions()...)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := remote.Write(tag(to), att, r.access.RemoteOptions()...); err != nil {
		r.t.Fatal(err)
	}
}

// engine runs one admission engine's CLI on a rendered policy.
type engine struct {
	name   string
	format policy.Format
	// admit runs the engine on ref; it returns whether the image was
	// admitted and everything the engine printed.
	admit func(t *testing.T, policyFile, ref string) (bool, string)
}

// engineEnv is what both CLIs run with: the Docker config for registry
// credentials (authn.DefaultKeychain in both), Go's SSL_CERT_FILE for a
// private CA, and TUF and the sigstore cache pointed at empty directories:
// nothing reaches beyond loopback.
func engineEnv(t *testing.T, dockerConfig, caFile string) []string {
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+dockerConfig, "TUF_ROOT="+filepath.Join(home, "tuf"),
		"SIGSTORE_NO_CACHE=1", "KYVERNO_EXPERIMENTAL=false")
	if caFile != "" {
		env = append(env, "SSL_CERT_FILE="+caFile)
	}
	return env
}

func engines(t *testing.T, tenv testenv.Env, dockerConfig, caFile string) []engine {
	tester := tenv.Tool(t, "policy-tester")
	kyverno := tenv.Tool(t, "kyverno")
	run := func(t *testing.T, bin string, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = engineEnv(t, dockerConfig, caFile)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("%s %s: %v (timed out)\n%s", filepath.Base(bin), strings.Join(args, " "), ctx.Err(), out.String())
		}
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("%s: %v", bin, err)
			}
			code = ee.ExitCode()
		}
		return code, out.String()
	}
	return []engine{
		{name: "policy-tester", format: policy.PolicyController, admit: func(t *testing.T, pf, ref string) (bool, string) {
			code, out := run(t, tester, "-policy", pf, "-image", ref, "-log-level", "warn")
			// A refusal is a JSON line {"errors": [...]}: the reasons,
			// decoded, are what the tests look for.
			for _, line := range strings.Split(out, "\n") {
				var res struct{ Errors []string }
				if json.Unmarshal([]byte(line), &res) == nil && len(res.Errors) > 0 {
					out = strings.Join(res.Errors, "\n") + "\n" + out
				}
			}
			return code == 0, out
		}},
		{name: "kyverno", format: policy.Kyverno, admit: func(t *testing.T, pf, ref string) (bool, string) {
			pod := filepath.Join(t.TempDir(), "pod.yaml")
			podYAML := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: train\n  namespace: ml\nspec:\n  containers:\n    - name: train\n      image: %s\n", ref)
			if err := os.WriteFile(pod, []byte(podYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := run(t, kyverno, "apply", pf, "--resource", pod, "--registry")
			return code == 0, out
		}},
	}
}

// render writes the policy of format f for repo into a file.
func render(t *testing.T, f policy.Format, repo string, r *release, opts ...policy.Option) string {
	t.Helper()
	rs, err := policy.ParseRepositories([]string{repo})
	if err != nil {
		t.Fatal(err)
	}
	b, err := policy.Render(f, rs, append([]policy.Option{policy.WithKeyFile(r.signer.pub), policy.WithVerifierKeyFile(r.verifier.pub)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), string(f)+".yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// admissionCase is one image and what each engine must do with it: admit
// it, or refuse it for the reason its output must contain.
type admissionCase struct {
	name string
	ref  name.Digest
	// refuse maps an engine to the substrings of its refusal (the
	// authority or rule, and the reason); none: admitted.
	refuse map[string][]string
}

func checkCases(t *testing.T, es []engine, policies map[policy.Format]string, cases []admissionCase) {
	t.Helper()
	for _, c := range cases {
		for _, e := range es {
			t.Run(c.name+"/"+e.name, func(t *testing.T) {
				ok, out := e.admit(t, policies[e.format], c.ref.String())
				want := c.refuse[e.name]
				switch {
				case len(want) == 0 && !ok:
					t.Errorf("%s refused %s, want it admitted:\n%s", e.name, c.ref, out)
				case len(want) > 0 && ok:
					t.Errorf("%s admitted %s, want it refused (%q):\n%s", e.name, c.ref, want, out)
				}
				for _, w := range want {
					if !ok && !strings.Contains(out, w) {
						t.Errorf("%s refused %s without the reason %q:\n%s", e.name, c.ref, w, out)
					}
				}
			})
		}
	}
}

// TestEnginesAdmitOnlyReleased runs the rendered policies through the real
// engines (policy-controller's policy-tester, the Kyverno CLI) against
// images in the local registry: an image signed by the signer key with a
// PASSED test-result attestation by the verifier key is admitted; an
// unsigned one, one signed by another key, one whose verification FAILED,
// one never verified, and one carrying another digest's replayed
// attestation are refused by both, each for its reason.
func TestEnginesAdmitOnlyReleased(t *testing.T) {
	tenv := testenv.Get(t)
	cosign := tenv.Tool(t, "cosign")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := &release{t: t, ctx: ctx, access: auth.Default(), signer: newKeyPair(t), verifier: newKeyPair(t),
		repo: fmt.Sprintf("%s/e2e-policy-%d/ml/pytorch", tenv.Registry, time.Now().UnixNano())}
	other := newKeyPair(t)

	released := r.push()
	r.sign(released, r.signer)
	r.verified(released, r.verifier, true)

	unsigned := r.push()
	r.verified(unsigned, r.verifier, true)

	otherSigner := r.push()
	r.sign(otherSigner, other)
	r.verified(otherSigner, r.verifier, true)

	failed := r.push()
	r.sign(failed, r.signer)
	r.verified(failed, r.verifier, false)

	unverified := r.push()
	r.sign(unverified, r.signer)

	verifiedByOther := r.push()
	r.sign(verifiedByOther, r.signer)
	r.verified(verifiedByOther, other, true)

	replayed := r.push()
	r.sign(replayed, r.signer)
	r.replay(released, replayed)

	// Stock cosign reads the test-result attestation: PASSED, bound to the
	// digest, under the verifier key and no other.
	out, err := exec.CommandContext(ctx, cosign, "verify-attestation", "--key", r.verifier.pub, "--insecure-ignore-tlog",
		"--allow-insecure-registry", "--type", verify.TestResultPredicateType, released.String()).Output()
	if err != nil {
		t.Fatalf("cosign verify-attestation --type %s: %v", verify.TestResultPredicateType, err)
	}
	var envl struct{ Payload []byte }
	var st struct {
		Subject   []struct{ Digest map[string]string }
		Predicate struct{ Result string }
	}
	if err := json.Unmarshal(bytes.SplitN(out, []byte("\n"), 2)[0], &envl); err != nil || json.Unmarshal(envl.Payload, &st) != nil ||
		st.Predicate.Result != "PASSED" || len(st.Subject) != 1 || "sha256:"+st.Subject[0].Digest["sha256"] != released.DigestStr() {
		t.Errorf("cosign printed %s: want a PASSED test result whose subject is %s", out, released.DigestStr())
	}
	if out, err := exec.CommandContext(ctx, cosign, "verify-attestation", "--key", r.signer.pub, "--insecure-ignore-tlog",
		"--allow-insecure-registry", "--type", verify.TestResultPredicateType, released.String()).CombinedOutput(); err == nil {
		t.Errorf("cosign verified the test-result attestation under the signer key:\n%s", out)
	}

	es := engines(t, tenv, t.TempDir(), "")
	pols := map[policy.Format]string{}
	for _, e := range es {
		pols[e.format] = render(t, e.format, r.repo, r)
	}
	checkCases(t, es, pols, []admissionCase{
		{"released", released, nil},
		{"unsigned", unsigned, map[string][]string{
			"policy-tester": {"authority signature", "no signatures found"},
			"kyverno":       {"failed to verify image", "no signatures found"}}},
		{"signed-by-another-key", otherSigner, map[string][]string{
			"policy-tester": {"authority signature", "invalid signature"},
			"kyverno":       {"failed to verify image", "invalid signature"}}},
		{"verification-failed", failed, map[string][]string{
			"policy-tester": {"cue policy for test-result", `predicate.result: conflicting values "FAILED" and "PASSED"`},
			"kyverno":       {"predicate " + verify.TestResultPredicateType, "says FAILED, want PASSED"}}},
		{"never-verified", unverified, map[string][]string{
			"policy-tester": {"authority verification", "no matching attestations"},
			"kyverno":       {"image attestations verification failed", "no matching attestations"}}},
		{"verified-by-another-key", verifiedByOther, map[string][]string{
			"policy-tester": {"authority verification", "accepted signatures do not match threshold"},
			"kyverno":       {"image attestations verification failed", "accepted signatures do not match threshold"}}},
		{"replayed-attestation", replayed, map[string][]string{
			"policy-tester": {"authority verification", "no matching subject digest found"},
			"kyverno":       {"image attestations verification failed", "no matching subject digest found"}}},
	})
}

// TestEnginesRequireRecentScan: with --require-vuln-scan, a released image
// is admitted only with a vulnerability attestation by the signer key whose
// scan finished within the limit.
func TestEnginesRequireRecentScan(t *testing.T) {
	tenv := testenv.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := &release{t: t, ctx: ctx, access: auth.Default(), signer: newKeyPair(t), verifier: newKeyPair(t),
		repo: fmt.Sprintf("%s/e2e-policy-vuln-%d/ml/pytorch", tenv.Registry, time.Now().UnixNano())}
	released := func() name.Digest {
		d := r.push()
		r.sign(d, r.signer)
		r.verified(d, r.verifier, true)
		return d
	}
	fresh := released()
	r.scanned(fresh, time.Now().Add(-2*time.Hour))
	stale := released()
	r.scanned(stale, time.Now().Add(-30*24*time.Hour))
	unscanned := released()

	es := engines(t, tenv, t.TempDir(), "")
	pols := map[policy.Format]string{}
	for _, e := range es {
		pols[e.format] = render(t, e.format, r.repo, r, policy.WithVulnMaxAge(48*time.Hour))
	}
	checkCases(t, es, pols, []admissionCase{
		{"scanned-2h-ago", fresh, nil},
		{"scanned-30d-ago", stale, map[string][]string{
			"policy-tester": {"rego policy for type vuln", "more than 48h ago"},
			"kyverno":       {"predicate " + policy.VulnPredicateType, "more than 48h ago"}}},
		{"never-scanned", unscanned, map[string][]string{
			"policy-tester": {"authority vuln-scan", "no matching attestations"},
			"kyverno":       {"image attestations verification failed", "no matching attestations"}}},
	})
}

// TestEnginesPrivateRegistry: the engines reach a registry behind htpasswd
// over TLS as a cluster's would, with the Docker config's login and the
// registry's CA (SSL_CERT_FILE); without the login they refuse, naming the
// registry's 401.
func TestEnginesPrivateRegistry(t *testing.T) {
	tenv := testenv.Get(t)
	pv := testenv.GetPrivate(t)
	t.Setenv("DOCKER_CONFIG", pv.DockerConfig)
	access, err := auth.New(auth.Config{CAFiles: []string{pv.CA}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := &release{t: t, ctx: ctx, access: access, signer: newKeyPair(t), verifier: newKeyPair(t),
		repo: fmt.Sprintf("%s/e2e-policy-private-%d/ml/pytorch", pv.Registry, time.Now().UnixNano())}
	released := r.push()
	r.sign(released, r.signer)
	r.verified(released, r.verifier, true)
	unsigned := r.push()
	r.verified(unsigned, r.verifier, true)

	pols := map[policy.Format]string{}
	for _, f := range policy.Formats {
		pols[f] = render(t, f, r.repo, r)
	}
	checkCases(t, engines(t, tenv, pv.DockerConfig, pv.CA), pols, []admissionCase{
		{"released", released, nil},
		{"unsigned", unsigned, map[string][]string{
			"policy-tester": {"authority signature", "no signatures found"},
			"kyverno":       {"failed to verify image", "no signatures found"}}},
	})
	noLogin := t.TempDir()
	if err := os.WriteFile(filepath.Join(noLogin, "config.json"), []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	checkCases(t, engines(t, tenv, noLogin, pv.CA), pols, []admissionCase{
		{"released-without-login", released, map[string][]string{
			"policy-tester": {"UNAUTHORIZED"},
			"kyverno":       {"UNAUTHORIZED"}}},
	})
}
