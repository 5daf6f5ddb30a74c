package verify

import (
	"testing"

	"imagectl/internal/testenv"
)

// TestDeps keeps the checks light: the runtimes (internal/verify/containerd,
// kubernetes, ...) carry containerd's client, CDI and client-go, never the
// package that evaluates their probes. (BuildKit's client, and through it
// some containerd modules, come with auth and lock.)
func TestDeps(t *testing.T) {
	testenv.CheckDeps(t, testenv.ClientGo, "k8s.io/api", "k8s.io/apimachinery",
		"github.com/containerd/containerd/v2/client", "tags.cncf.io/container-device-interface", testenv.Grype)
}
