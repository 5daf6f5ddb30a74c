package releasefile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestConcurrentRecordsLoseNothing: writers that each open the lock file
// themselves (as two processes do: flock is per open file) record
// releases in one release file at once; every release is in the file
// afterwards. Without the lock, a writer's read-modify-write drops what
// another wrote between its read and its rename.
func TestConcurrentRecordsLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo", FileName)
	const writers, each = 8, 12
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				n := w*each + i
				rel := Release{
					Source: fmt.Sprintf("127.0.0.1:5000/staging/demo@sha256:%064x", n+1),
					Tags:   []string{fmt.Sprintf("demo-w%d-r%d", w, i)},
					Month:  "2026-12",
				}
				if err := Record(path, "demo", "127.0.0.1:5000/demo", rel, "demo"); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Record() = %v", err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Releases) != writers*each {
		t.Errorf("the release file has %d releases after %d concurrent Records, want every one", len(f.Releases), writers*each)
	}
}

// TestUpdateWaitsForTheLock: while another open file holds the lock,
// Update changes nothing and ends with its context's cause; once the lock
// is released it writes.
func TestUpdateWaitsForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	unlock, err := lockFile(context.Background(), LockPath(path))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the test gave up")
	cancel(cause)
	called := false
	err = Update(ctx, path, func(f *File) (*File, error) { called = true; return f, nil })
	if !errors.Is(err, cause) || called {
		t.Errorf("Update() while the lock is held = %v (change called: %v), want %v and no change", err, called, cause)
	}
	unlock()
	rel := Release{Source: fmt.Sprintf("127.0.0.1:5000/staging/demo@sha256:%064x", 1), Tags: []string{"demo-2026.12"}, Month: "2026-12"}
	if err := Update(context.Background(), path, func(f *File) (*File, error) {
		if f != nil {
			return nil, fmt.Errorf("Update passed %+v for a missing file, want nil", f)
		}
		f = &File{Image: "demo", Repository: "127.0.0.1:5000/demo"}
		return f, f.Add(rel)
	}); err != nil {
		t.Fatalf("Update() after unlock = %v", err)
	}
	if f, err := ReadFile(path); err != nil || len(f.Releases) != 1 {
		t.Errorf("ReadFile() after Update = %+v, %v; want the one release", f, err)
	}
}
