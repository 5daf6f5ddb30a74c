package monitoring

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps monitoring a leaf that the release, the re-scan and the
// render command can import without weight: none of BuildKit, containerd,
// client-go, cosign, ggcr or grype, nor an imagectl stage package.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	heavy := []string{
		"github.com/moby/buildkit", "github.com/containerd/", "k8s.io/", "github.com/sigstore/",
		"github.com/google/go-containerregistry", "github.com/anchore/", "google.golang.org/grpc",
	}
	allowedImagectl := map[string]bool{"imagectl/internal/monitoring": true, "imagectl/internal/atomicfile": true}
	pkgs := strings.Fields(string(out))
	if len(pkgs) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, p := range pkgs {
		for _, h := range heavy {
			if strings.HasPrefix(p, h) {
				t.Errorf("internal/monitoring links %s (%s...): keep it a leaf", p, h)
			}
		}
		if strings.HasPrefix(p, "imagectl/") && !allowedImagectl[p] {
			t.Errorf("internal/monitoring imports %s: only %v", p, allowedImagectl)
		}
	}
}
