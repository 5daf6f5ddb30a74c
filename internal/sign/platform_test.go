package sign

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
)

// A multi-platform lock is refused, not signed as one of its images.
func TestSignAndAttestRefusesMultiPlatformLock(t *testing.T) {
	l := &lock.Lock{Name: "demo", Base: lock.Base{Platform: "linux/amd64"}, Platforms: []lock.Resolution{{Platform: "linux/arm64"}}}
	ref, _ := name.NewDigest("registry.example.invalid/demo@sha256:" + strings.Repeat("a", 64))
	err := SignAndAttest(context.Background(), ref, l, Builder{})
	if err == nil || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
		t.Fatalf("SignAndAttest(two-platform lock) = %v, want an error naming both platforms", err)
	}
}
