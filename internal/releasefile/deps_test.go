package releasefile

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps keeps the release file light: scan, the catalog and pin read
// it without linking promote's or verify's weight.
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.BuildKit, testenv.ClientGo, testenv.Containerd, testenv.NVML, testenv.Grype)
}
