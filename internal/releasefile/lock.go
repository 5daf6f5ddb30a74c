package releasefile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// lockPoll is how often Update asks again for a lock another process
// holds.
const lockPoll = 20 * time.Millisecond

// LockPath is the advisory lock file beside the release file at path:
// .releases.json.lock in the same folder. It is never removed (removing
// it would let two processes lock two different files).
func LockPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// Update changes the release file at path under an exclusive advisory lock
// (flock on LockPath(path)), so that two processes (two `imagectl
// release` runs, a release and `promote`) recording releases in one file
// never lose each other's entry: it reads the file (a missing file is
// passed as nil), calls change with it and writes what change returns
// atomically (WriteFile), all while holding the lock. A nil result writes
// nothing. It waits for a lock another process holds until ctx ends. The
// lock is advisory: only writers that take it (Update, Record) are kept
// apart; readers need none, the write being atomic.
func Update(ctx context.Context, path string, change func(f *File) (*File, error)) error {
	unlock, err := lockFile(ctx, LockPath(path))
	if err != nil {
		return fmt.Errorf("locking release file %s: %w", path, err)
	}
	defer unlock()
	f, err := ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = nil, nil
	}
	if err != nil {
		return err
	}
	next, err := change(f)
	if err != nil || next == nil {
		return err
	}
	return WriteFile(path, next)
}

// lockFile takes an exclusive flock on the file at path (created when
// missing), asking again every lockPoll while another open file holds it,
// until ctx ends. unlock releases it and closes the file.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	fl := flock.New(path, flock.SetPermissions(0o644))
	locked, err := fl.TryLockContext(ctx, lockPoll)
	if !locked {
		fl.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for another process's lock on %s: %w", path, context.Cause(ctx))
		}
		return nil, err
	}
	return func() { _ = fl.Unlock() }, nil
}
