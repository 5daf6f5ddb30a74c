package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
)

// TestAccessFlags: a --ca-file or --netrc that cannot be read is a usage
// error naming the file, before a command that touches the network runs.
func TestAccessFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "netrc")
	if err := os.WriteFile(truncated, []byte("machine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ca-file", filepath.Join(dir, "missing.pem"), "lock", "check", "../../../specs"}, "missing.pem"},
		{[]string{"--ca-file", notPEM, "mirror", "../../../specs"}, notPEM + ": no PEM certificate"},
		{[]string{"--netrc", truncated, "lock", "check", "../../../specs"}, truncated},
	} {
		_, _, code := runSpecCmd(t, tc.args...)
		if code != exitcode.Usage {
			t.Errorf("imagectl %s: exit %d, want %d", strings.Join(tc.args, " "), code, exitcode.Usage)
		}
		root := New()
		root.SetArgs(tc.args)
		root.SetOut(&strings.Builder{})
		root.SetErr(&strings.Builder{})
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("imagectl %s = %v, want an error naming %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
