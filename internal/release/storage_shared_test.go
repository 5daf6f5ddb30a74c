package release

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/lock"
	"imagectl/internal/spec"
	"imagectl/internal/verify"
)

// TestCheckSharedFingerprints: verifying images at once on one storage
// claim is refused only where two of them write their fingerprint to the
// same path on that storage.
func TestCheckSharedFingerprints(t *testing.T) {
	img := func(name, storage, fp string) spec.Image {
		var i spec.Image
		i.Name = name
		i.Runtime.Storage.Path = storage
		i.Runtime.FingerprintPath = fp
		return i
	}
	shared := []spec.Image{
		img("a", "/storage", "/storage/.imagectl/fingerprint.json"),
		img("b", "/storage", "/tmp/fingerprint.json"),
		img("c", "/storage/", "/storage/.imagectl/fingerprint.json"),
	}
	err := CheckSharedFingerprints(shared, 2)
	var se *SharedFingerprintError
	if !errors.As(err, &se) || se.Path != ".imagectl/fingerprint.json" || strings.Join(se.Images, ",") != "a,c" {
		t.Fatalf("CheckSharedFingerprints = %v, want a and c named on .imagectl/fingerprint.json", err)
	}
	// The claim mounted at another path in each image: the same file on it.
	err = CheckSharedFingerprints([]spec.Image{img("a", "/storage", "/storage/fp.json"), img("b", "/data", "/data/fp.json")}, 2)
	if !errors.As(err, &se) || se.Path != "fp.json" || strings.Join(se.Images, ",") != "a,b" {
		t.Errorf("one file on the claim under two mount paths: %v, want a and b named on fp.json", err)
	}
	if !strings.Contains(err.Error(), "--jobs 1") {
		t.Errorf("the error gives no way out: %v", err)
	}
	for _, c := range []struct {
		name string
		imgs []spec.Image
		jobs int
	}{
		{"one job at a time", shared, 1},
		{"fingerprints off the storage", []spec.Image{img("a", "/storage", "/tmp/fp.json"), img("b", "/storage", "/tmp/fp.json")}, 4},
		{"one path each", []spec.Image{img("a", "/storage", "/storage/a.json"), img("b", "/storage", "/storage/b.json")}, 4},
		{"no fingerprint", []spec.Image{img("a", "/storage", ""), img("b", "/storage", "")}, 4},
		{"a sibling folder, not the storage", []spec.Image{img("a", "/storage", "/storage2/fp.json"), img("b", "/storage", "/storage2/fp.json")}, 4},
	} {
		if err := CheckSharedFingerprints(c.imgs, c.jobs); err != nil {
			t.Errorf("%s: %v, want nil", c.name, err)
		}
	}
}

// TestReadyStorage: the throwaway storage holds the lock's ready file at
// its place under the storage path; a ready file outside that path (a
// sibling folder sharing its prefix included) is refused.
func TestReadyStorage(t *testing.T) {
	l := &lock.Lock{Name: "demo"}
	l.Runtime.Storage.Path, l.Runtime.Storage.ReadyFile = "/storage/", "/storage/sub/.ready"
	st, err := verify.ReadyStorage(l)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(st.Dir)
	if _, err := os.Stat(filepath.Join(st.Dir, "sub", ".ready")); err != nil {
		t.Errorf("ready file not made under the storage folder: %v", err)
	}
	for _, rf := range []string{"/storage2/.ready", "/elsewhere/.ready", "/storage"} {
		l.Runtime.Storage.Path, l.Runtime.Storage.ReadyFile = "/storage", rf
		if st, err := verify.ReadyStorage(l); err == nil || !strings.Contains(err.Error(), "not under its path") {
			if st != nil {
				os.RemoveAll(st.Dir)
			}
			t.Errorf("ready_file %s under path /storage: %v, want refused", rf, err)
		}
	}
}
