package lock

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps keeps the lock format light: whatever reads a lock (build,
// verify, promote, scan, the admission policies) gets the schema and the
// codec, not the resolution's BuildKit runner (internal/lock/resolve).
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.BuildKit, testenv.ClientGo, testenv.Containerd, testenv.NVML, testenv.Grype)
}
