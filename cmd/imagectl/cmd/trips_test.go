package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/build"
	"imagectl/internal/exitcode"
)

// execErr runs imagectl with args and returns stderr, the exit code and
// the error main would print.
func execErr(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	var out, errb strings.Builder
	root := New()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return errb.String(), exitcode.Code(err), err
}

// TestUndeclaredVarNamesTheFlag: a --var no spec declares is reported with
// the flag, never as "<nil>: ..." (a diagnostic without a source range).
func TestUndeclaredVarNamesTheFlag(t *testing.T) {
	for _, verb := range []string{"lock", "print", "mirror"} {
		stderr, code, err := execErr(t, verb, "--var", "nosuch=1", "../../../specs/demo.hcl")
		if err == nil || code != exitcode.Failure {
			t.Fatalf("imagectl %s --var nosuch=1 = %v (exit %d), want a spec error", verb, err, code)
		}
		// What main prints (the error) and what the command wrote.
		if msg := err.Error() + "\n" + stderr; strings.Contains(msg, "<nil>") || !strings.Contains(msg, "--var nosuch") {
			t.Errorf("imagectl %s --var nosuch=1: %q, want it to name --var nosuch and no <nil>", verb, msg)
		}
	}
}

// TestMalformedNetrc: commands that touch no network ignore credentials;
// a malformed netrc found in $HOME is a warning; one named by $NETRC or
// --netrc is a usage error naming it.
func TestMalformedNetrc(t *testing.T) {
	home := t.TempDir()
	bad := filepath.Join(home, ".netrc")
	if err := os.WriteFile(bad, []byte("machine"), 0o600); err != nil {
		t.Fatal(err)
	}
	specs := "../../../specs/demo.hcl"
	locks := t.TempDir() // empty: lock check reports the lock missing (3)

	t.Run("named, offline commands", func(t *testing.T) {
		t.Setenv("NETRC", bad)
		for _, args := range [][]string{{"version"}, {"compat", "--torch", "2.6.0"}, {"lint", specs}, {"print", specs}} {
			if _, code, err := execErr(t, args...); code != exitcode.OK {
				t.Errorf("NETRC=<malformed> imagectl %s = %v (exit %d), want 0: it touches no network", strings.Join(args, " "), err, code)
			}
		}
	})
	t.Run("named, network command", func(t *testing.T) {
		t.Setenv("NETRC", bad)
		_, code, err := execErr(t, "lock", "check", "--images", locks, specs)
		if code != exitcode.Usage || err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("NETRC=<malformed> imagectl lock check = %v (exit %d), want exit %d naming %s", err, code, exitcode.Usage, bad)
		}
		_, code, err = execErr(t, "--netrc", bad, "mirror", specs)
		if code != exitcode.Usage || err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("imagectl --netrc <malformed> mirror = %v (exit %d), want exit %d naming %s", err, code, exitcode.Usage, bad)
		}
	})
	t.Run("found in HOME", func(t *testing.T) {
		t.Setenv("NETRC", "")
		t.Setenv("HOME", home)
		stderr, code, err := execErr(t, "lock", "check", "--images", locks, specs)
		if code != exitcode.LockStale {
			t.Errorf("imagectl lock check with a malformed ~/.netrc = %v (exit %d), want the command to run (exit %d)", err, code, exitcode.LockStale)
		}
		if !strings.Contains(stderr, "ignoring the netrc") || !strings.Contains(stderr, bad) {
			t.Errorf("stderr lacks the warning naming %s:\n%s", bad, stderr)
		}
	})
}

// TestCommandsAgree: lock has build's buildkitd default, a missing spec
// path is a usage error in every command that loads specs, and a missing
// required flag is a usage error.
func TestCommandsAgree(t *testing.T) {
	t.Run("lock defaults to build's buildkitd", func(t *testing.T) {
		t.Setenv("BUILDKIT_HOST", "")
		root := New()
		lockCmd, _, err := root.Find([]string{"lock"})
		if err != nil {
			t.Fatal(err)
		}
		buildCmd, _, _ := root.Find([]string{"build"})
		lu, bu := lockCmd.Flags().Lookup("addr").Usage, buildCmd.Flags().Lookup("addr").Usage
		if lu != bu || !strings.Contains(lu, build.DefaultAddr) {
			t.Errorf("lock --addr: %q, build --addr: %q; want the same default %s", lu, bu, build.DefaultAddr)
		}
		// Without an address lock dials build.DefaultAddr (no buildkitd
		// there: unreachable, 69), not "no BuildKit address".
		_, code, err := execErr(t, "lock", "--dir", t.TempDir(), "../../../specs/demo.hcl", "--var", "registry=127.0.0.1:1")
		if err == nil || strings.Contains(err.Error(), "no BuildKit address") {
			t.Errorf("imagectl lock without --addr = %v (exit %d), want it to try %s", err, code, build.DefaultAddr)
		}
	})
	t.Run("missing specs path", func(t *testing.T) {
		dir := t.TempDir()
		for _, verb := range []string{"lint", "print", "lock", "mirror"} {
			_, code, _ := execErr(t, verb, filepath.Join(dir, "specs"))
			if code != exitcode.Usage {
				t.Errorf("imagectl %s <missing path>: exit %d, want %d", verb, code, exitcode.Usage)
			}
		}
	})
	t.Run("verify job flags without the kubernetes runtime", func(t *testing.T) {
		img := "127.0.0.1:5000/x@sha256:" + strings.Repeat("a", 64)
		lockPath := filepath.Join(t.TempDir(), "lock.json") // never read: usage comes first
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--render-job"}, "--render-job needs --runtime kubernetes (got --runtime auto)"},
			{[]string{"--job-log", "job.log", "--runtime", "containerd"}, "--job-log needs --runtime kubernetes (got --runtime containerd)"},
			{[]string{"--render-job", "--job-log", "job.log", "--runtime", "kubernetes"}, "give one"},
			{[]string{"--render-job", "--runtime", "kubernetes", "--sign", "--key", "k"}, "no result for --sign"},
			{[]string{"--job-log", "job.log", "--runtime", "kubernetes", "--sign", "--key", "k"}, "never signed"},
		} {
			args := append([]string{"verify", img, "--lock", lockPath}, tc.args...)
			_, code, err := execErr(t, args...)
			if code != exitcode.Usage || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("imagectl %s = %v (exit %d), want exit %d: %s", strings.Join(args, " "), err, code, exitcode.Usage, tc.want)
			}
		}
	})
	t.Run("verify without --lock", func(t *testing.T) {
		_, code, err := execErr(t, "verify", "127.0.0.1:5000/x@sha256:"+strings.Repeat("a", 64))
		if code != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "lock") {
			t.Errorf("imagectl verify without --lock = %v (exit %d), want exit %d naming --lock", err, code, exitcode.Usage)
		}
	})
}
