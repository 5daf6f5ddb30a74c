package layerplan

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps: the SBOM and the scanner read images back by the layer plan, so
// it carries no BuildKit (that is the build's, which installs by it).
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.BuildKit, testenv.ClientGo, testenv.Containerd, testenv.NVML, testenv.Grype)
}
