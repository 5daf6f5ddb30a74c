package lock

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"imagectl/internal/spec"
)

// InputsDigest returns "sha256:<hex>" over the canonical JSON of img with
// its position (File, Line, Column) cleared: moving an image block within
// or between files does not make its lock stale, any other edit does.
func InputsDigest(img spec.Image) (string, error) {
	img.File, img.Line, img.Column = "", 0, 0
	b, err := json.Marshal(img)
	if err != nil {
		return "", fmt.Errorf("encoding image %s: %w", img.Name, err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
