package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"imagectl/internal/exitcode"
	"imagectl/internal/sign"
)

// imagectl release opens both keys and checks each against its public half
// before anything is built (here nothing could be: the buildkitd address
// does not exist), each with its own password variable.
func TestReleaseChecksKeysFirst(t *testing.T) {
	dir := t.TempDir()
	signKey, signPub, err := sign.GenerateKeyPair(filepath.Join(dir, "signer"), []byte("signer-pw"))
	if err != nil {
		t.Fatal(err)
	}
	verKey, _, err := sign.GenerateKeyPair(filepath.Join(dir, "verifier"), []byte("verifier-pw"))
	if err != nil {
		t.Fatal(err)
	}
	demo := filepath.Join("..", "..", "..", "specs", "demo.hcl")
	for _, tc := range []struct {
		name       string
		env        map[string]string
		extra      []string
		wantInErr  []string
		notInError string
	}{{
		name:      "no password",
		env:       map[string]string{},
		wantInErr: []string{"--key " + signKey, "$" + sign.PasswordEnv},
	}, {
		name:      "wrong signing password",
		env:       map[string]string{sign.PasswordEnv: "nope", sign.VerifierPasswordEnv: "verifier-pw"},
		wantInErr: []string{"--key " + signKey, "wrong password"},
	}, {
		name:      "verifier key without its own password falls back to the signer's",
		env:       map[string]string{sign.CosignPasswordEnv: "signer-pw"},
		wantInErr: []string{"--verifier-key " + verKey, "wrong password"},
	}, {
		name:      "verifier public key of another key",
		env:       map[string]string{sign.CosignPasswordEnv: "signer-pw", sign.VerifierPasswordEnv: "verifier-pw"},
		extra:     []string{"--verifier-pub", signPub},
		wantInErr: []string{"--verifier-key " + verKey, "not the public half"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{sign.PasswordEnv, sign.CosignPasswordEnv, sign.VerifierPasswordEnv} {
				v, ok := tc.env[k]
				if !ok {
					t.Setenv(k, "")
					os.Unsetenv(k)
					continue
				}
				t.Setenv(k, v)
			}
			args := append([]string{"release", demo, "--images-dir", t.TempDir(), "--key", signKey, "--verifier-key", verKey,
				"--addr", "unix://" + filepath.Join(dir, "no-buildkitd.sock")}, tc.extra...)
			_, stderr, code := run(t, "", args...)
			if code != exitcode.Usage {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitcode.Usage, stderr)
			}
			for _, w := range tc.wantInErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not name %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "verifier-pw") || strings.Contains(stderr, "signer-pw") {
				t.Errorf("stderr holds a password:\n%s", stderr)
			}
		})
	}
}

// queue never blocks its sender while the receiver waits (a build waiting
// for the tty display), and delivers everything in order, then closes.
func TestQueueNeverBlocksTheSender(t *testing.T) {
	in, out := make(chan int), make(chan int)
	go queue(in, out)
	sent := make(chan struct{})
	go func() {
		for i := range 1000 {
			in <- i
		}
		close(in)
		close(sent)
	}()
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the sender blocked while nobody received")
	}
	n := 0
	for v := range out {
		if v != n {
			t.Fatalf("received %d, want %d", v, n)
		}
		n++
	}
	if n != 1000 {
		t.Errorf("received %d values, want 1000", n)
	}
}
