package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestPKI: the server certificate verifies for 127.0.0.1 against the CA,
// the htpasswd holds the password's bcrypt, basic-auth holds user:password,
// and a second run keeps the CA and the password (a running buildkitd keeps
// trusting the CA it started with).
func TestPKI(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{dir, "--user", "ci"}); err != nil {
		t.Fatalf("run() = %v", err)
	}
	read := func(n string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ca, pw := read("ca.pem"), read("password")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("ca.pem holds no certificate")
	}
	blk, _ := pem.Decode(read("server.pem"))
	if blk == nil {
		t.Fatal("server.pem is not PEM")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "localhost", "::1"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}
	user, hash, _ := strings.Cut(strings.TrimSpace(string(read("htpasswd"))), ":")
	if user != "ci" || bcrypt.CompareHashAndPassword([]byte(hash), pw) != nil {
		t.Errorf("htpasswd = %q, want ci's bcrypt of the password", read("htpasswd"))
	}
	if got := strings.TrimSpace(string(read("basic-auth"))); got != "ci:"+string(pw) {
		t.Errorf("basic-auth is not ci:password")
	}
	if fi, _ := os.Stat(filepath.Join(dir, "password")); fi.Mode().Perm() != 0o600 {
		t.Errorf("password mode %v, want 0600", fi.Mode().Perm())
	}
	if err := run([]string{dir, "--user", "ci"}); err != nil {
		t.Fatalf("second run() = %v", err)
	}
	if !bytes.Equal(read("ca.pem"), ca) || !bytes.Equal(read("password"), pw) {
		t.Error("a second run replaced the CA or the password")
	}
}
