package release

import (
	"fmt"
	"strings"

	"imagectl/internal/spec"
)

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
		rel, ok := img.Runtime.Storage.On(img.Runtime.FingerprintPath)
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
