package resolve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"imagectl/internal/auth"
	"imagectl/internal/compat"
	"imagectl/internal/spec"
)

// InputsDigest returns "sha256:<hex>" over the canonical JSON of img with
// its position (File, Line, Column) cleared: moving an image block within
// or between files does not make its lock stale, any other edit does.
// The default platform list (["linux/amd64"]) is left out, so the locks of
// single-platform images keep the digest they had before specs had
// platforms. Credentials in an index URL (user:password@) are not inputs:
// they are left out, so a rotated password neither stales the lock nor
// enters it. Nor is the vulnerability gate (policy.vulnerabilities): it is
// read from the spec at promotion, so an allow-list edit needs no rebuild.
func InputsDigest(img spec.Image) (string, error) {
	img.File, img.Line, img.Column = "", 0, 0
	img.Policy.Vulnerabilities = nil
	img.Policy.SupportMonths = 0
	if slices.Equal(img.Platforms, []string{compat.DefaultPlatform}) {
		img.Platforms = nil
	}
	img.PipIndexes = slices.Clone(img.PipIndexes)
	for i, ix := range img.PipIndexes {
		if clean, _, err := auth.SplitUserinfo(ix); err == nil {
			img.PipIndexes[i] = clean
		}
	}
	b, err := json.Marshal(img)
	if err != nil {
		return "", fmt.Errorf("encoding image %s: %w", img.Name, err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
