package result

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps keeps the result a leaf: promote, policy and release read it
// without linking verify's runtimes.
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.BuildKit, testenv.ClientGo, testenv.Containerd, testenv.NVML, testenv.Grype)
}
