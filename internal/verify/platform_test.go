package verify

import (
	"context"
	"strings"
	"testing"

	"imagectl/internal/lock"
)

// A multi-platform lock is refused, not verified as one of its images.
func TestRunRefusesMultiPlatformLock(t *testing.T) {
	l := &lock.Lock{Name: "demo", Base: lock.Base{Platform: "linux/amd64"}, Platforms: []lock.Resolution{{Platform: "linux/arm64"}}}
	_, err := Run(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
		t.Fatalf("Run(two-platform lock) = %v, want an error naming both platforms", err)
	}
}
