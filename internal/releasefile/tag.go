package releasefile

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// NextTag is the month's ("2026-12") immutable tag for d in f:
// IMAGE-YYYY.MM, or, when a re-release in the same month already gave that
// tag to another digest, IMAGE-YYYY.MM.N with the first free N. A digest
// already released this month keeps its tag.
func NextTag(f *File, image, month string, d name.Digest) string {
	owner := map[string]string{} // tag -> digest
	for _, rel := range f.Releases {
		rd, err := rel.Digest()
		if err != nil {
			continue
		}
		for _, t := range rel.Tags {
			owner[t] = rd.DigestStr()
		}
	}
	base := image + "-" + strings.ReplaceAll(month, "-", ".")
	for n := 0; ; n++ {
		t := base
		if n > 0 {
			t = fmt.Sprintf("%s.%d", base, n)
		}
		if o, ok := owner[t]; !ok || o == d.DigestStr() {
			return t
		}
	}
}

// Previous is the newest release in f of a digest other than d, or nil:
// what a release of d is compared with.
func (f *File) Previous(d name.Digest) *Release {
	for i := len(f.Releases) - 1; i >= 0; i-- {
		if rd, err := f.Releases[i].Digest(); err == nil && rd.DigestStr() != d.DigestStr() {
			return &f.Releases[i]
		}
	}
	return nil
}
