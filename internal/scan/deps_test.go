package scan

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps: the scan runs grype over the signed SBOM and reads release
// files (internal/releasefile), never verify's runtimes (client-go, NVML).
// grype's image loader (stereoscope) links the containerd client itself,
// and BuildKit comes through internal/lock and internal/auth (see
// promote's TestDeps), so neither is checked here.
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.ClientGo, testenv.NVML)
}
