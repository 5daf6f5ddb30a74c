package resolve

import (
	"errors"
	"strings"
	"testing"

	"imagectl/internal/testenv"
)

// TestE2EForbiddenAptChain locks openssh-server with a library of its
// closure forbidden: the lock fails naming the library and the chain of
// Depends, read from apt in the base, that pulled it in.
func TestE2EForbiddenAptChain(t *testing.T) {
	env := testenv.Get(t)
	ctx := e2eContext(t)
	img := loadDemo(t, env)
	img.Apt = []string{"openssh-server"}
	img.Pip = nil
	img.Policy.ForbiddenPackages = []string{"libcbor0.8"}
	_, err := Image(ctx, img, WithBuildkit(env.BuildkitHost))
	var fe *ForbiddenError
	if !errors.As(err, &fe) {
		t.Fatalf("Resolve = %v, want a ForbiddenError", err)
	}
	t.Logf("refused: %v", err)
	if fe.Kind != "apt" || fe.Package != "libcbor0.8" || fe.TraceErr != nil {
		t.Errorf("ForbiddenError %+v, want apt libcbor0.8, traced", fe)
	}
	if len(fe.Chain) < 3 || fe.Chain[0] != "openssh-server" || fe.Chain[len(fe.Chain)-1] != "libcbor0.8" {
		t.Errorf("chain %v, want openssh-server -> ... -> libcbor0.8 (through openssh-client and libfido2-1)", fe.Chain)
	}
	if !strings.Contains(err.Error(), "pulled in by openssh-server -> ") {
		t.Errorf("error %q does not say what pulled it in", err)
	}
}
