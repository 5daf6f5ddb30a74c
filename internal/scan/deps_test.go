package scan

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps: the scan runs grype over the signed SBOM and reads release
// files (internal/releasefile), never verify's runtimes (client-go, NVML)
// nor BuildKit (the lock format and the layer plan it reads carry none).
// grype's image loader (stereoscope) links the containerd client itself,
// so containerd is not checked here.
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.BuildKit, testenv.ClientGo, testenv.NVML)
}
