package release

import (
	"errors"
	"strings"
	"testing"

	"imagectl/internal/spec"
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
	if !errors.As(err, &se) || se.Path != "/storage/.imagectl/fingerprint.json" || strings.Join(se.Images, ",") != "a,c" {
		t.Fatalf("CheckSharedFingerprints = %v, want a and c named on /storage/.imagectl/fingerprint.json", err)
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
