package policy

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps: rendering admission policies needs the spec and the
// verification result's names, not verify's runtimes nor BuildKit.
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.BuildKit, testenv.ClientGo, testenv.Containerd, testenv.NVML, testenv.Grype)
}
