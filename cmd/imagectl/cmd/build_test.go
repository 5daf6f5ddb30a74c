package cmd

import (
	"strings"
	"testing"

	"imagectl/internal/exitcode"
)

// TestBuildSignFlags checks --sign's preconditions before anything is read
// or dialled: it needs --push (the signature lives in the registry) and a key.
func TestBuildSignFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no push", []string{"build", "--lock", "missing.json", "--sign", "--key", "k"}, "--sign needs --push"},
		{"no key", []string{"build", "--lock", "missing.json", "--push", "--sign"}, "a signing key is needed"},
		{"key and kms", []string{"build", "--lock", "missing.json", "--push", "--sign", "--key", "k", "--kms", "hashivault://x"}, "exclude each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, "", tc.args...)
			if code != exitcode.Usage || !strings.Contains(stderr, tc.want) {
				t.Errorf("imagectl %s: exit %d, stderr %q; want exit %d mentioning %q", strings.Join(tc.args, " "), code, stderr, exitcode.Usage, tc.want)
			}
		})
	}
}
