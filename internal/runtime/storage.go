package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"imagectl/internal/exitcode"
	"imagectl/internal/logs"
)

// DefaultStorageTimeout is how long the init waits for storage by default.
const DefaultStorageTimeout = 60 * time.Second

// StorageState is what the storage wait found.
type StorageState struct {
	// Configured is false when the config names no storage at all.
	Configured bool `json:"configured"`
	Ready      bool `json:"ready"`
	// Root is the storage directory: Storage.Path, or the ready file's
	// directory when only the ready file is configured.
	Root string `json:"root,omitempty"`
	// Mount is the filesystem the root lives on, when it is ready.
	Mount  *Mount        `json:"mount,omitempty"`
	Waited time.Duration `json:"waited_ns"`
}

// StorageNotReadyError says required storage never became ready.
type StorageNotReadyError struct {
	What    string
	Timeout time.Duration
}

func (e *StorageNotReadyError) Error() string {
	return fmt.Sprintf("storage not ready after %v: waited for %s; check that the platform mounts the volume (and writes the ready file), or raise IMAGECTL_STORAGE_TIMEOUT", e.Timeout, e.What)
}

// ExitCode implements exitcode.Coder: 75 (EX_TEMPFAIL), so a platform
// can tell "retry on another node" from a failed job.
func (e *StorageNotReadyError) ExitCode() int { return exitcode.StorageNotReady }

// describeStorage says in words what the wait for s is for.
func describeStorage(s Storage) string {
	var parts []string
	if s.Path != "" {
		parts = append(parts, s.Path+" to be a mount point")
	}
	if s.ReadyFile != "" {
		parts = append(parts, s.ReadyFile+" to exist")
	}
	return strings.Join(parts, " and ")
}

// storageRoot is the directory s makes persistent.
func storageRoot(s Storage) string {
	if s.Path != "" {
		return filepath.Clean(s.Path)
	}
	if s.ReadyFile != "" {
		return filepath.Dir(filepath.Clean(s.ReadyFile))
	}
	return ""
}

// storageReady checks once.
func storageReady(s Storage, o options) (bool, *Mount, error) {
	var m *Mount
	if s.Path != "" || s.ReadyFile != "" {
		mounts, err := readMounts(o.mountinfo)
		if err != nil {
			return false, nil, err
		}
		if s.Path != "" {
			at, ok := mountAt(mounts, s.Path)
			if !ok {
				return false, nil, nil
			}
			m = &at
		}
		if s.ReadyFile != "" {
			if _, err := os.Stat(s.ReadyFile); err != nil {
				return false, nil, nil
			}
			if m == nil {
				if of, ok := mountOf(mounts, s.ReadyFile); ok {
					m = &of
				}
			}
		}
	}
	return true, m, nil
}

// WaitStorage polls until the configured storage is ready or its timeout
// passes. Required storage that never comes is a *StorageNotReadyError;
// optional storage gives a state with Ready false and no error.
func WaitStorage(ctx context.Context, s Storage, opts ...Option) (StorageState, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return StorageState{}, err
	}
	return waitStorage(ctx, s, o)
}

func waitStorage(ctx context.Context, s Storage, o options) (StorageState, error) {
	st := StorageState{Configured: s.Path != "" || s.ReadyFile != "", Root: storageRoot(s)}
	if !st.Configured {
		return st, nil
	}
	timeout := s.Timeout.Std()
	if timeout <= 0 {
		timeout = DefaultStorageTimeout
	}
	start := time.Now()
	deadline := start.Add(timeout)
	var tick *time.Ticker
	for {
		ok, m, err := storageReady(s, o)
		if err != nil {
			return st, err
		}
		st.Waited = time.Since(start)
		if ok {
			st.Ready, st.Mount = true, m
			return st, nil
		}
		if tick == nil {
			logs.From(ctx).Debug("waiting for storage", "for", describeStorage(s), "timeout", timeout)
		}
		if o.notReady != nil {
			o.notReady()
		}
		if !time.Now().Before(deadline) {
			if s.Required {
				return st, &StorageNotReadyError{What: describeStorage(s), Timeout: timeout}
			}
			return st, nil
		}
		if tick == nil {
			tick = time.NewTicker(o.poll)
			defer tick.Stop()
		}
		wait := time.NewTimer(time.Until(deadline))
		select {
		case <-ctx.Done():
			wait.Stop()
			return st, fmt.Errorf("waiting for storage: %w", context.Cause(ctx))
		case <-tick.C:
		case <-wait.C:
		}
		wait.Stop()
	}
}
