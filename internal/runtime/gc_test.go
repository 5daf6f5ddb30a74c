package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// file writes size bytes at path with the given age relative to now.
func file(t *testing.T, path string, size int, age time.Duration, now time.Time) {
	t.Helper()
	write(t, path, string(make([]byte, size)))
	mt := now.Add(-age)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestCollectCachesByAge(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	cache := filepath.Join(dir, "inductor")
	outside := filepath.Join(dir, "precious")
	file(t, filepath.Join(cache, "old/a.so"), 100, 10*24*time.Hour, now)
	file(t, filepath.Join(cache, "old/b.py"), 100, 9*24*time.Hour, now)
	file(t, filepath.Join(cache, "fresh/c.so"), 100, time.Hour, now)
	file(t, filepath.Join(cache, "future.so"), 100, -time.Hour, now) // written by the running workload
	file(t, outside, 100, 30*24*time.Hour, now)
	if err := os.Mkdir(filepath.Join(cache, "empty-before"), 0o775); err != nil {
		t.Fatal(err)
	}
	// An old link to a file outside the cache: the link may go, the target never.
	if err := os.Symlink(outside, filepath.Join(cache, "link")); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-20 * 24 * time.Hour)
	_ = os.Chtimes(outside, old, old)

	r, err := CollectCaches(context.Background(), []string{cache}, 7*24*time.Hour, 0, now)
	if err != nil {
		t.Fatalf("CollectCaches: %v", err)
	}
	for path, want := range map[string]bool{
		filepath.Join(cache, "old/a.so"):     false,
		filepath.Join(cache, "old/b.py"):     false,
		filepath.Join(cache, "old"):          false, // emptied by the GC
		filepath.Join(cache, "fresh/c.so"):   true,
		filepath.Join(cache, "future.so"):    true,
		filepath.Join(cache, "empty-before"): true, // not ours to remove
		outside:                              true,
		cache:                                true,
	} {
		if exists(path) != want {
			t.Errorf("after GC, exists(%s) = %v, want %v", path, !want, want)
		}
	}
	if r.Removed < 2 || r.RemovedBytes < 200 {
		t.Errorf("CollectCaches = %+v, want at least 2 files, 200 bytes removed", r)
	}
}

func TestCollectCachesBySize(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "triton"), filepath.Join(dir, "torchinductor_root")
	file(t, filepath.Join(a, "1"), 1000, 5*time.Hour, now)
	file(t, filepath.Join(b, "2"), 1000, 4*time.Hour, now)
	file(t, filepath.Join(a, "3"), 1000, 3*time.Hour, now)
	file(t, filepath.Join(b, "4"), 1000, 2*time.Hour, now)
	r, err := CollectCaches(context.Background(), []string{a, b}, 0, 2500, now)
	if err != nil {
		t.Fatalf("CollectCaches: %v", err)
	}
	// Oldest first across both roots, until at most 2500 bytes remain.
	want := map[string]bool{filepath.Join(a, "1"): false, filepath.Join(b, "2"): false, filepath.Join(a, "3"): true, filepath.Join(b, "4"): true}
	for p, w := range want {
		if exists(p) != w {
			t.Errorf("after GC, exists(%s) = %v, want %v", p, !w, w)
		}
	}
	if r.KeptBytes != 2000 || r.Removed != 2 {
		t.Errorf("CollectCaches = %+v, want 2 removed, 2000 bytes kept", r)
	}

	// A budget smaller than what the running workload just wrote: everything
	// old goes, the new file stays.
	file(t, filepath.Join(b, "new"), 1000, -time.Minute, now)
	r, err = CollectCaches(context.Background(), []string{a, b}, 0, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(a, "3")) || exists(filepath.Join(b, "4")) || !exists(filepath.Join(b, "new")) {
		t.Errorf("after GC to 1 byte: 3 %v, 4 %v, new %v; want only new left", exists(filepath.Join(a, "3")), exists(filepath.Join(b, "4")), exists(filepath.Join(b, "new")))
	}

	// Neither rule set: nothing happens.
	if r, _ := CollectCaches(context.Background(), []string{a, b}, 0, 0, now); r.Removed != 0 {
		t.Errorf("CollectCaches(no limits) removed %d files", r.Removed)
	}
}

func TestGCRoots(t *testing.T) {
	tmp := t.TempDir()
	for _, d := range []string{"torchinductor_root", "torchinductor_1000"} {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(tmp, "torchinductor_file"), "not a dir")
	if err := os.Symlink("/", filepath.Join(tmp, "torchinductor_link")); err != nil {
		t.Fatal(err)
	}
	dirs := []CacheDir{{Name: "inductor", Path: "/s/inductor", Compile: true}, {Name: "hf", Path: "/s/hf"},
		{Name: "triton", Path: "/team/triton", Compile: true, FromEnv: true}}
	got := gcRoots(dirs, tmp)
	want := []string{"/s/inductor", filepath.Join(tmp, "torchinductor_1000"), filepath.Join(tmp, "torchinductor_root")}
	if len(got) != len(want) {
		t.Fatalf("gcRoots = %v, want %v (HF_HOME, dirs from the environment, plain files and links excluded)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("gcRoots[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}
