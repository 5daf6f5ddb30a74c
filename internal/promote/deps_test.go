package promote

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps: promotion reads verification results (internal/verify/result)
// and vulnerability scans (internal/scan/report), never verify's runtimes
// (client-go, containerd, NVML) nor grype, and reads locks
// (internal/lock, the format) without their resolution's BuildKit
// (internal/lock/resolve).
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.BuildKit, testenv.ClientGo, testenv.Containerd, testenv.NVML, testenv.Grype)
}
