package release

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/buildkit/client"

	"imagectl/internal/build"
	"imagectl/internal/sign"
)

// e2ePassword protects the end-to-end tests' throwaway keys.
var e2ePassword = []byte("e2e")

// e2eKeys is a signer's and a verifier's key pair, as the end-to-end
// releases use them.
type e2eKeys struct {
	signKey, signPub, verKey, verPub string
}

// newE2EKeys makes both key pairs under dir with e2ePassword.
func newE2EKeys(t *testing.T, dir string) e2eKeys {
	t.Helper()
	var k e2eKeys
	var err error
	if k.signKey, k.signPub, err = sign.GenerateKeyPair(filepath.Join(dir, "signer"), e2ePassword); err != nil {
		t.Fatal(err)
	}
	if k.verKey, k.verPub, err = sign.GenerateKeyPair(filepath.Join(dir, "verifier"), e2ePassword); err != nil {
		t.Fatal(err)
	}
	return k
}

// dialE2E connects to the test's buildkitd; the client is closed with the test.
func dialE2E(t *testing.T, ctx context.Context, addr string) *client.Client {
	t.Helper()
	c, err := build.Dial(ctx, addr, 10*time.Second)
	if err != nil {
		t.Fatalf("build.Dial(%s) = %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
