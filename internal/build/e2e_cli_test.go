package build

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
)

// TestE2ECLI runs `imagectl build` as a user does: a lock file on disk,
// digest (or JSON) on stdout, progress on stderr, exit 69 for a dead daemon.
func TestE2ECLI(t *testing.T) {
	e := getE2E(t)
	dir := t.TempDir()
	l := e.lock(t, uniq("cli"), "1.0.0", smallCore)
	lockPath := filepath.Join(dir, "lock.json")
	if err := lock.Write(lockPath, l); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "imagectl")
	if out, err := exec.Command("go", "build", "-o", bin, "imagectl/cmd/imagectl").CombinedOutput(); err != nil {
		t.Fatalf("building imagectl: %v\n%s", err, out)
	}
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, append([]string{"build", "--lock", lockPath, "--init", e.init}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}

	stdout, stderr, code := run("--push", "--progress", "plain", "--addr", e.env.BuildkitHost)
	if code != 0 {
		t.Fatalf("imagectl build --push: exit %d\n%s", code, stderr)
	}
	digest := strings.TrimSpace(stdout)
	if !strings.HasPrefix(digest, "sha256:") || strings.Contains(digest, "\n") {
		t.Errorf("stdout = %q, want the digest alone", stdout)
	}
	if !strings.Contains(stderr, "pip install --no-index --no-deps") && !strings.Contains(stderr, "CACHED") {
		t.Errorf("stderr has no BuildKit progress:\n%s", stderr)
	}
	t.Logf("progress (plain):\n%s", stderr)

	stdout, stderr, code = run("--push", "-o", "json", "--progress", "quiet", "--addr", e.env.BuildkitHost)
	if code != 0 {
		t.Fatalf("imagectl build -o json: exit %d\n%s", code, stderr)
	}
	var r Result
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not a Result: %v\n%s", err, stdout)
	}
	if r.Digest != digest || r.Ref != l.Repos.Staging+"@"+digest || r.Size == 0 || len(r.Layers) == 0 || r.LockDigest != l.Digest {
		t.Errorf("-o json = %+v, want digest %s pushed to %s with size and layers", r, digest, l.Repos.Staging)
	}

	_, stderr, code = run("--addr", "unix:///nonexistent/buildkitd.sock", "--timeout", "2s")
	if code != exitcode.Unavailable || !strings.Contains(stderr, "/nonexistent/buildkitd.sock") {
		t.Errorf("dead --addr: exit %d, stderr %q; want %d naming the address", code, stderr, exitcode.Unavailable)
	}

	// A hand-edited lock is refused before any build.
	b, _ := os.ReadFile(lockPath)
	if err := os.WriteFile(lockPath, bytes.Replace(b, []byte(`"1.0.0"`), []byte(`"1.0.1"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = run("--addr", e.env.BuildkitHost)
	if code != exitcode.LockTampered {
		t.Errorf("edited lock: exit %d, stderr %q; want %d", code, stderr, exitcode.LockTampered)
	}
}
