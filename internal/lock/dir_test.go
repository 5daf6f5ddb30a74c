package lock

import (
	"context"
	"os"
	"strings"
	"testing"

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
		if _, err := Read(Path(dir, n)); err != nil {
			t.Errorf("the lock of %s, which resolves, was not written: %v", n, err)
		}
	}
	for _, n := range []string{"demo-b", "demo-d"} {
		if _, err := os.Stat(Path(dir, n)); !os.IsNotExist(err) {
			t.Errorf("a lock of %s, which cannot resolve, is there: %v", n, err)
		}
	}
}
