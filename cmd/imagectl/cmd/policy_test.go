package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
)

// runPolicyCmd executes imagectl with args and returns stdout, the error's
// text (what main prints) and the exit code.
func runPolicyCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	root := New()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	msg := errb.String()
	if err != nil {
		msg += err.Error()
	}
	return out.String(), msg, exitcode.Code(err)
}

func TestPolicyRender(t *testing.T) {
	const specs = "../../../specs"
	const key, ver = "../../../internal/policy/testdata/signer.pub", "../../../internal/policy/testdata/verifier.pub"
	out := filepath.Join(t.TempDir(), "cip.yaml")
	keys := []string{"--key", key, "--verifier-key", ver}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"kyverno from the demo spec", append([]string{"policy", "render", specs, "--image", "demo", "--format", "kyverno", "--var", "registry=registry.example:5000"}, keys...), 0,
			"- registry.example:5000/imagectl/demo@*", ""},
		{"policy-controller from --repo", append([]string{"policy", "render", "--format", "policy-controller", "--repo", "registry.example/ml/pytorch"}, keys...), 0,
			"- glob: registry.example/ml/pytorch:*", ""},
		{"vuln scan", append([]string{"policy", "render", "--format", "kyverno", "--repo", "registry.example/ml/pytorch", "--require-vuln-scan", "--vuln-max-age", "36h"}, keys...), 0,
			"value: 36h", ""},
		{"to a file", append([]string{"policy", "render", "--format", "policy-controller", "--repo", "registry.example/ml/pytorch", "--output-file", out}, keys...), 0, "", ""},
		{"to a file, the old spelling", append([]string{"policy", "render", "--format", "policy-controller", "--repo", "registry.example/ml/pytorch", "-o", out + ".old"}, keys...), 0, "", "-o FILE is deprecated, use --output-file"},
		{"-o yaml", append([]string{"policy", "render", "--format", "kyverno", "--repo", "r.example/x", "-o", "yaml"}, keys...), 0, "kind: ClusterPolicy", ""},
		{"no format", append([]string{"policy", "render", "--repo", "registry.example/ml/pytorch"}, keys...), 2, "", "format"},
		{"unknown format", append([]string{"policy", "render", "--format", "opa", "--repo", "r.example/x"}, keys...), 2, "", `unknown policy format "opa"`},
		{"-o json", append([]string{"policy", "render", "--format", "kyverno", "--repo", "r.example/x", "-o", "json"}, keys...), 2, "", "policy render writes yaml"},
		{"max age alone", append([]string{"policy", "render", "--format", "kyverno", "--repo", "r.example/x", "--vuln-max-age", "1h"}, keys...), 2, "", "needs --require-vuln-scan"},
		{"bad repo", append([]string{"policy", "render", "--format", "kyverno", "--repo", "r.example/X:tag"}, keys...), 2, "", `--repo: release repository "r.example/X:tag"`},
		{"missing key", []string{"policy", "render", "--format", "kyverno", "--repo", "r.example/x", "--key", "nope.pub", "--verifier-key", ver}, 1, "", "nope.pub"},
		{"unknown image", append([]string{"policy", "render", specs, "--format", "kyverno", "--image", "nope"}, keys...), 2, "", `no image named "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runPolicyCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("imagectl %s: exit %d, want %d\nstdout:\n%s\nerror:\n%s", strings.Join(tc.args, " "), code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("imagectl %s: stdout lacks %q:\n%s", strings.Join(tc.args, " "), tc.stdout, stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("imagectl %s: error lacks %q:\n%s", strings.Join(tc.args, " "), tc.stderr, stderr)
			}
		})
	}
	for _, p := range []string{out, out + ".old"} {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "kind: ClusterImagePolicy") {
			t.Errorf("--output-file %s wrote %q, %v; want the ClusterImagePolicy", p, b, err)
		}
	}
}
