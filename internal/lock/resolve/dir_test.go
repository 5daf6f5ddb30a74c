package resolve

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/spec"
)

// TestLockAllReportsEveryImage: an image that cannot lock (its base tag is
// not in the registry) does not stop the others: both good images are
// written, and the error names each image that failed.
func TestLockAllReportsEveryImage(t *testing.T) {
	f := newFixture(t)
	first, second := f.demo(), f.demo()
	first.Name, second.Name = "demo-a", "demo-c"
	broken1, broken2 := f.demo(), f.demo()
	broken1.Name, broken2.Name = "demo-b", "demo-d"
	broken1.Base = strings.Replace(f.base, "debian-base:bookworm", "no-such-base:bookworm", 1)
	broken2.Base = strings.Replace(f.base, "debian-base:bookworm", "also-missing:bookworm", 1)
	dir := t.TempDir()
	err := LockAll(context.Background(), dir, []spec.Image{first, broken1, second, broken2}, f.opts()...)
	if err == nil {
		t.Fatal("LockAll() = nil, want the errors of demo-b and demo-d")
	}
	for _, n := range []string{"image demo-b:", "no-such-base", "image demo-d:", "also-missing"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("LockAll() error = %q, want it to name %q", err, n)
		}
	}
	for _, n := range []string{"demo-a", "demo-c"} {
		if _, err := lock.Read(lock.Path(dir, n)); err != nil {
			t.Errorf("the lock of %s, which resolves, was not written: %v", n, err)
		}
	}
	for _, n := range []string{"demo-b", "demo-d"} {
		if _, err := os.Stat(lock.Path(dir, n)); !os.IsNotExist(err) {
			t.Errorf("a lock of %s, which cannot resolve, is there: %v", n, err)
		}
	}
}

// TestCheckAllMissing: an image without a lock is reported as missing
// (exit 3, like a stale lock), not as stale.
func TestCheckAllMissing(t *testing.T) {
	dir := t.TempDir()
	res, err := CheckAll(context.Background(), dir, []spec.Image{{Name: "demo"}})
	var me *MissingError
	if !errors.As(err, &me) || me.Image != "demo" || exitcode.Code(err) != exitcode.LockStale {
		t.Fatalf("CheckAll(no lock) = %v (exit %d), want a *MissingError for demo, exit %d", err, exitcode.Code(err), exitcode.LockStale)
	}
	if len(res) != 1 || strings.Contains(res[0].Error, "stale") || !strings.Contains(res[0].Error, "no lock for demo") {
		t.Errorf("CheckAll(no lock)[0].Error = %q, want it to say the lock is missing, not stale", res[0].Error)
	}
}

// TestParseNamesNoGoType: a lock file holding [] or nothing says so in
// JSON's terms, with its path, never naming a Go type.
func TestParseNamesNoGoType(t *testing.T) {
	for in, want := range map[string]string{"[]": "found a JSON array where a lock object belongs", "": "empty"} {
		_, err := lock.Parse("images/demo/lock.json", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "images/demo/lock.json") || strings.Contains(err.Error(), "Go value") || strings.Contains(err.Error(), "EOF") {
			t.Errorf("Parse(%q) = %v, want %q with the path and no Go type", in, err, want)
		}
	}
}
