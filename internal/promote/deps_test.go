package promote

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps: promotion reads verification results (internal/verify/result)
// and vulnerability scans (internal/scan/report), never verify's runtimes
// (client-go, the containerd client, NVML) nor grype. BuildKit's client
// and containerd's remotes are still linked through internal/lock (its
// resolver lives beside the schema) and internal/auth (BuildKit session
// auth): only their containerd client is checked until those split.
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.ClientGo, testenv.NVML, testenv.Grype, testenv.Containerd+"/containerd/v2/client")
}
