package release

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"imagectl/internal/lock"
	"imagectl/internal/spec"
	"imagectl/internal/verify"
)

// Storage is a throwaway host folder that stands in for the platform's
// persistent storage while an image is verified in a container: it carries
// the lock's ready file, so the init finds the storage ready and puts TMPDIR
// and the caches on it, as it will in production.
type Storage struct {
	Dir string
}

// ReadyStorage creates the folder and the ready file the lock's runtime
// config waits for.
func ReadyStorage(l *lock.Lock) (*Storage, error) {
	dir, err := os.MkdirTemp("", "imagectl-storage-")
	if err != nil {
		return nil, fmt.Errorf("creating verification storage: %w", err)
	}
	st := l.Runtime.Storage
	if st.ReadyFile != "" {
		rel, ok := onStorage(st.ReadyFile, st.Path)
		if !ok {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("lock %s: runtime storage ready_file %q is not under its path %q", l.Name, st.ReadyFile, st.Path)
		}
		ready := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(ready), 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("creating verification storage: %w", err)
		}
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("creating verification storage: %w", err)
		}
	}
	return &Storage{Dir: dir}, nil
}

// Wrap returns rt with a Close that also removes the storage folder.
func (s *Storage) Wrap(rt verify.Runtime) verify.Runtime { return storageRuntime{rt, s.Dir} }

type storageRuntime struct {
	verify.Runtime
	dir string
}

func (r storageRuntime) Close() error {
	err := r.Runtime.Close()
	if rmErr := os.RemoveAll(r.dir); err == nil && rmErr != nil {
		err = fmt.Errorf("removing verification storage: %w", rmErr)
	}
	return err
}

// SharedFingerprintError is a release that would verify several images at
// once on one storage (a Kubernetes claim every Job mounts) while they write
// their environment fingerprints to one path on it: each image's init
// overwrites the file the others' init.fingerprint check reads.
type SharedFingerprintError struct {
	Path   string // relative to the storage path, where the claim is mounted
	Images []string
}

func (e *SharedFingerprintError) Error() string {
	return fmt.Sprintf("images %s write their runtime.fingerprint_path to %s on the storage claim all their Jobs mount: with --jobs > 1 each init overwrites the others' fingerprint; give each image its own fingerprint_path, keep it off the storage, or use --jobs 1",
		strings.Join(e.Images, ", "), e.Path)
}

// CheckSharedFingerprints returns a *SharedFingerprintError when jobs > 1
// and two or more images write their fingerprint to the same file on the
// claim they share: the same path relative to each one's storage path,
// where the claim is mounted. Paths off the storage are each Job's own.
func CheckSharedFingerprints(imgs []spec.Image, jobs int) error {
	if jobs < 2 {
		return nil
	}
	by := map[string][]string{} // a file on the claim: the images writing it
	var rels []string
	for _, img := range imgs {
		rel, ok := onStorage(img.Runtime.FingerprintPath, img.Runtime.Storage.Path)
		if !ok {
			continue
		}
		if by[rel] == nil {
			rels = append(rels, rel)
		}
		by[rel] = append(by[rel], img.Name)
	}
	for _, rel := range rels {
		if len(by[rel]) > 1 {
			return &SharedFingerprintError{Path: rel, Images: by[rel]}
		}
	}
	return nil
}

// onStorage returns p relative to the storage path storage (the file's
// place on the volume mounted there), and whether p is under it. An empty
// p or storage is under nothing.
func onStorage(p, storage string) (string, bool) {
	if p == "" || storage == "" {
		return "", false
	}
	rel, ok := strings.CutPrefix(p, strings.TrimSuffix(storage, "/")+"/")
	return rel, ok && rel != ""
}
