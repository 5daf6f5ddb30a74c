package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
)

// TestNewcomerTrips: what a new user tripped on (issue 37), at the CLI.
func TestNewcomerTrips(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	emptyDir := filepath.Join(dir, "emptydir")
	warn := filepath.Join(dir, "warn.hcl")
	for _, err := range []error{
		os.WriteFile(empty, nil, 0o644),
		os.Mkdir(emptyDir, 0o755),
		os.WriteFile(warn, []byte(`image "x" {
  base   = "r.example/b:1"
  python = "3.11"
  verify {
    min_busbw_gbps = 100
  }
  repos {
    staging = "r.example/s/x"
    release = "r.example/r/x"
  }
}
`), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
		not    string // in neither
	}{
		{"unknown command", []string{"lnit"}, exitcode.Usage, "", "", ""},
		{"unknown subcommand", []string{"completion", "tcsh"}, exitcode.Usage, "", "", ""},
		{"group without subcommand", []string{"policy"}, exitcode.OK, "render", "", ""},
		{"bad policy name", []string{"policy", "render", "--format", "kyverno", "--repo", "r.example/x", "--name", "Bad_Name!"}, exitcode.Usage, "", "", ""},
		{"lint empty file", []string{"lint", empty}, exitcode.Failure, "", "", ""},
		{"lint empty dir", []string{"lint", emptyDir}, exitcode.Usage, "", "", "glob"},
		{"lint warning counted", []string{"lint", warn}, exitcode.OK, "", "1 image, 1 warning", "level=WARN"},
		{"lint warning positioned", []string{"lint", warn}, exitcode.OK, "", "on " + warn + " line 5", ""},
		{"compat no made-up floor", []string{"compat", "--torch", "2.6.0", "--cuda", "11.8"}, exitcode.OK, "", "", "99999"},
		{"compat native floor", []string{"compat", "--cuda", "11.8"}, exitcode.OK, "520.61.05", "", ""},
		{"version json", []string{"version", "-o", "json"}, exitcode.OK, `"go":`, "", ""},
		{"lock --images", []string{"lock", "check", "--images", dir, "../../../specs/demo.hcl"}, exitcode.LockStale, "", "", ""},
		{"lock --dir hidden alias", []string{"lock", "check", "--dir", dir, "../../../specs/demo.hcl"}, exitcode.LockStale, "", "", ""},
		{"lock help names --images only", []string{"lock", "--help"}, exitcode.OK, "--images", "", "--dir"},
		{"lock help names the subcommands, not --check", []string{"lock", "--help"}, exitcode.OK, "upgrade", "", "--check"},
		{"lock --check still works, deprecated on stderr", []string{"lock", "--check", "--images", dir, "../../../specs/demo.hcl"}, exitcode.LockStale, "", "Flag --check has been deprecated, use imagectl lock check", ""},
		{"lock --check -o json: stdout stays JSON", []string{"lock", "--check", "--images", dir, "../../../specs/demo.hcl", "-o", "json"}, exitcode.LockStale, "[", "deprecated", ""},
		{"lock --package needs upgrade", []string{"lock", "--package", "x", "--images", dir, "../../../specs/demo.hcl"}, exitcode.Usage, "", "lock upgrade", ""},
		{"scan --releases still works, deprecated on stderr", []string{"scan", "--releases", dir, "--vex", "x.json"}, exitcode.Usage, "", "Flag --releases has been deprecated, use imagectl scan releases", ""},
		{"scan releases takes one directory", []string{"scan", "releases"}, exitcode.Usage, "", "", ""},
		{"mirror --artifact still works, deprecated on stderr", []string{"mirror", "--artifact", "a"}, exitcode.Usage, "", "Flag --artifact has been deprecated, use imagectl mirror artifact", ""},
		{"mirror artifact takes SRC DST_REPO", []string{"mirror", "artifact", "a"}, exitcode.Usage, "", "", ""},
		{"release help names --images only", []string{"release", "--help"}, exitcode.OK, "--images ", "", "--images-dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runSpecCmd(t, tc.args...)
			args := strings.Join(tc.args, " ")
			if code != tc.code {
				t.Errorf("imagectl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, tc.code, out, errs)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("imagectl %s: stdout lacks %q:\n%s", args, tc.stdout, out)
			}
			if !strings.Contains(errs, tc.stderr) {
				t.Errorf("imagectl %s: stderr lacks %q:\n%s", args, tc.stderr, errs)
			}
			if tc.not != "" && strings.Contains(out+errs, tc.not) {
				t.Errorf("imagectl %s: output holds %q:\n%s%s", args, tc.not, out, errs)
			}
		})
	}
}

// TestLintMessages: the error main prints names what is wrong, not a glob
// or a Go type.
func TestLintMessages(t *testing.T) {
	dir := t.TempDir()
	_, _, err := execErr(t, "lint", dir)
	if err == nil || !strings.Contains(err.Error(), "no spec found") {
		t.Errorf("imagectl lint <empty dir> = %v, want it to say no spec was found", err)
	}
	out, _, code := runSpecCmd(t, "version", "-o", "json")
	var v versionInfo
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Go == "" {
		t.Errorf("imagectl version -o json = %q (exit %d), want a JSON object with go", out, code)
	}
}
