package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
)

// A bad --builder or TLS flag is a usage error naming the flag and the
// value, given before anything is dialled; so is a builder for a platform
// the lock (or no image of the specs) has.
func TestBuilderFlags(t *testing.T) {
	demoLock := filepath.Join(t.TempDir(), "lock.json")
	l := &lock.Lock{SchemaVersion: lock.SchemaVersion, Name: "demo", Core: lock.Core{Python: "3.11"}, Base: lock.Base{Platform: "linux/amd64"}}
	if err := lock.Write(demoLock, l); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no =", []string{"build", "--lock", demoLock, "--builder", "linux/arm64"}, []string{"--builder", `"linux/arm64"`, "PLATFORM=ADDRESS"}},
		{"bad platform", []string{"build", "--lock", demoLock, "--builder", "arm64=tcp://arm:1234"}, []string{"--builder", `"arm64=tcp://arm:1234"`, "OS/ARCH"}},
		{"no scheme", []string{"build", "--lock", demoLock, "--builder", "linux/arm64=arm:1234"}, []string{"--builder", "arm:1234", "tcp://HOST:PORT"}},
		{"tcp without port", []string{"build", "--lock", demoLock, "--builder", "linux/arm64=tcp://arm"}, []string{"--builder", "tcp://arm", "tcp://HOST:PORT"}},
		{"twice", []string{"build", "--lock", demoLock, "--builder", "linux/arm64=tcp://a:1", "--builder", "linux/arm64=tcp://b:1"}, []string{"--builder", "linux/arm64 has a builder already"}},
		{"platform not in the lock", []string{"build", "--lock", demoLock, "--builder", "linux/arm64=tcp://127.0.0.1:9"}, []string{"--builder", "linux/arm64=tcp://127.0.0.1:9", "has no platform linux/arm64 (it has linux/amd64)"}},
		{"cert without key", []string{"build", "--lock", demoLock, "--addr", "tcp://127.0.0.1:9", "--tlscert", "c.pem"}, []string{"--tlscert and --tlskey"}},
		{"missing ca", []string{"build", "--lock", demoLock, "--addr", "tcp://127.0.0.1:9", "--tlscacert", "/nonexistent/ca.pem"}, []string{"--tlscacert /nonexistent/ca.pem"}},
		{"lock: bad value", []string{"lock", "upgrade", "--builder", "linux/arm64="}, []string{"--builder", `"linux/arm64="`}},
		{"lock: no image has the platform", []string{"lock", "../../../specs/demo.hcl", "--dir", t.TempDir(), "--builder", "linux/arm64=tcp://127.0.0.1:9"}, []string{"--builder", "no image to lock has platform linux/arm64 (they have linux/amd64)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := run(t, "", tc.args...)
			ok := code == exitcode.Usage
			for _, w := range tc.want {
				ok = ok && strings.Contains(stderr, w)
			}
			if !ok {
				t.Errorf("imagectl %s: exit %d, stderr %q; want exit %d mentioning %q", strings.Join(tc.args, " "), code, stderr, exitcode.Usage, tc.want)
			}
		})
	}
}
