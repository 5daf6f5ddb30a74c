package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"imagectl/internal/compat"
	"imagectl/internal/exitcode"
	"imagectl/internal/spec"
)

// runSpecCmd executes imagectl with args and returns stdout, stderr and the exit code.
func runSpecCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	root := New()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errb.String(), exitcode.Code(err)
}

func TestSpecCommands(t *testing.T) {
	const specs = "../../../specs"
	const bad = "../../../internal/spec/testdata/bad/torch-2.6-cuda-12.1.hcl"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{"lint clean", []string{"lint", specs, "--var", "registry=127.0.0.1:5000"}, 0, "", "5 images, no problems"},
		{"lint bad", []string{"lint", bad}, 1, "", "on " + bad + " line 5"},
		{"lint bad json", []string{"lint", "-o", "json", bad}, 1, `"summary": "torch 2.6.0 publishes no cu121 wheel"`, ""},
		{"lint bad --var", []string{"lint", "--var", "novalue", specs}, 2, "", ""},
		{"lint undeclared --var", []string{"lint", "--var", "nope=1", specs}, 1, "", `Undeclared variable "nope"`},
		{"lint missing path", []string{"lint", "does-not-exist"}, 2, "", ""},
		{"lint bad output", []string{"lint", "-o", "yaml", specs}, 2, "", ""},
		{"print human", []string{"print", specs}, 0, "2.6.0+cu124", ""},
		{"print one", []string{"print", specs, "--image", "demo"}, 0, "demo-core==1.0.0", ""},
		{"print missing image", []string{"print", specs, "--image", "nope"}, 2, "", ""},
		{"print bad", []string{"print", bad}, 1, "", "publishes no cu121 wheel"},
		{"compat", []string{"compat", "--torch", "2.6.0", "--cuda", "12.1"}, 0, "Choose one explicitly", ""},
		{"compat cu130 archs numerically", []string{"compat", "--torch", "2.11.0"}, 0, "75..120", ""},
		{"compat unknown torch", []string{"compat", "--torch", "9.9.9"}, 1, "", ""},
		{"compat args", []string{"compat", "extra"}, 2, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runSpecCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("imagectl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.code, out, errs)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("imagectl %s: stdout lacks %q:\n%s", strings.Join(tc.args, " "), tc.stdout, out)
			}
			if !strings.Contains(errs, tc.stderr) {
				t.Errorf("imagectl %s: stderr lacks %q:\n%s", strings.Join(tc.args, " "), tc.stderr, errs)
			}
		})
	}
}

func TestPrintJSON(t *testing.T) {
	out, errs, code := runSpecCmd(t, "print", "../../../specs", "--output", "json")
	if code != 0 {
		t.Fatalf("print -o json: exit %d: %s", code, errs)
	}
	var imgs []spec.Image
	if err := json.Unmarshal([]byte(out), &imgs); err != nil {
		t.Fatalf("print -o json is not a list of images: %v", err)
	}
	if len(imgs) != 5 {
		t.Errorf("print -o json = %d images, want 5", len(imgs))
	}
	for _, img := range imgs {
		if img.Torch != "" && (img.TorchVariant == "" || img.NCCL == "" || img.CUDNN == "" || img.DriverFloor == "") {
			t.Errorf("image %s lacks a pin: %+v", img.Name, img)
		}
	}
}

func TestCompatJSON(t *testing.T) {
	out, _, code := runSpecCmd(t, "compat", "--cuda", "11.8", "-o", "json")
	var ans compat.Answer
	if code != 0 || json.Unmarshal([]byte(out), &ans) != nil {
		t.Fatalf("compat -o json: exit %d, output %s", code, out)
	}
	if ans.Digest != compat.Digest() || len(ans.Wheels) != 1 || ans.Wheels[0].Variant != "cu118" || ans.Wheels[0].Mode != "native" {
		t.Errorf("compat --cuda 11.8 = %+v", ans)
	}
}
