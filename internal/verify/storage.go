package verify

import (
	"fmt"
	"os"
	"path/filepath"

	"imagectl/internal/lock"
	"imagectl/internal/owner"
)

// Storage is a throwaway host folder that stands in for the platform's
// persistent storage while an image is verified in a container: it carries
// the lock's ready file, so the init finds the storage ready and puts TMPDIR
// and the caches on it, as it will in production.
type Storage struct {
	Dir string
}

// ReadyStorage creates the folder and the ready file the lock's runtime
// config waits for, after removing the folders of verifications that were
// killed (owner.SweepTemp: the caches a killed run's probes wrote there).
func ReadyStorage(l *lock.Lock) (*Storage, error) {
	_, _ = owner.SweepTemp(storagePattern, nil) // best effort: a folder it cannot remove is only files
	dir, err := owner.MkdirTemp(storagePattern)
	if err != nil {
		return nil, fmt.Errorf("creating verification storage: %w", err)
	}
	st := l.Runtime.Storage
	if st.ReadyFile != "" {
		rel, ok := st.On(st.ReadyFile)
		if !ok {
			_ = owner.RemoveTemp(dir)
			return nil, fmt.Errorf("lock %s: runtime storage ready_file %q is not under its path %q", l.Name, st.ReadyFile, st.Path)
		}
		ready := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(ready), 0o755); err != nil {
			_ = owner.RemoveTemp(dir)
			return nil, fmt.Errorf("creating verification storage: %w", err)
		}
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			_ = owner.RemoveTemp(dir)
			return nil, fmt.Errorf("creating verification storage: %w", err)
		}
	}
	return &Storage{Dir: dir}, nil
}

// Wrap returns rt with a Close that also removes the storage folder.
func (s *Storage) Wrap(rt Runtime) Runtime { return storageRuntime{rt, s.Dir} }

type storageRuntime struct {
	Runtime
	dir string
}

func (r storageRuntime) Close() error {
	err := r.Runtime.Close()
	if rmErr := owner.RemoveTemp(r.dir); err == nil && rmErr != nil {
		err = fmt.Errorf("removing verification storage: %w", rmErr)
	}
	return err
}

// Unwrap is the runtime the storage's Close wraps.
func (r storageRuntime) Unwrap() Runtime { return r.Runtime }

// storagePattern names ReadyStorage's folders in TMPDIR.
const storagePattern = "imagectl-storage-"

// ShmBytes is the /dev/shm size verification gives the image's containers:
// the lock's runtime.min_shm_bytes, at least 1 GiB.
func ShmBytes(l *lock.Lock) int64 {
	if l != nil && l.Runtime.MinShmBytes > 1<<30 {
		return l.Runtime.MinShmBytes
	}
	return 1 << 30
}
