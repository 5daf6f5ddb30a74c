package bkauth

import (
	"os"
	"path/filepath"
	"testing"

	"imagectl/internal/auth"
)

func TestSession(t *testing.T) {
	dir := t.TempDir()
	netrc := filepath.Join(dir, "netrc")
	if err := os.WriteFile(netrc, []byte("machine idx.example login alice password pw1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{NetrcFile: netrc})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(Session(a, []string{"reg.example"}, nil)); got != 1 {
		t.Errorf("Session(no secrets) has %d attachables, want the auth provider only", got)
	}
	if got := len(Session(a, []string{"reg.example"}, a.HTTPAuthSecrets([]string{"https://idx.example/x.whl"}))); got != 2 {
		t.Errorf("Session(secrets) has %d attachables, want the auth provider and the secrets", got)
	}
}
