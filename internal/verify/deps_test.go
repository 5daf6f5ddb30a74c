package verify

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps keeps the checks light: the runtimes (internal/verify/containerd,
// kubernetes, ...) carry containerd's client, CDI and client-go, never the
// package that evaluates their probes; nor does it link BuildKit (it reads
// locks through internal/lock, the format, not their resolution).
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.BuildKit, testenv.ClientGo, "k8s.io/api", "k8s.io/apimachinery",
		testenv.Containerd, "tags.cncf.io/container-device-interface", testenv.Grype)
}
