// Command pki makes the private-service fixtures of `make up` in DIR: a CA,
// a server certificate it signs for the loopback names, a random password
// and the htpasswd (bcrypt) the distribution registry checks it against.
//
//	pki DIR [--user NAME]
//
// Files: ca.pem, ca.key, server.pem, server.key, password, htpasswd,
// basic-auth (user:password, for the wheel index). Existing files are kept
// (the CA and the password stay stable across `make up` runs, so a running
// buildkitd that trusts the CA keeps trusting it); a missing one is made.
// Nothing secret is printed. `pki k8s DIR ...` makes the local Kubernetes'
// certificates instead (k8s.go).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/bcrypt"

	"imagectl/internal/atomicfile"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pki:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "k8s" {
		return runK8s(args[1:]) // the local Kubernetes' PKI (k8s.go)
	}
	fs := flag.NewFlagSet("pki", flag.ContinueOnError)
	user := fs.String("user", "imagectl-ci", "the login of the registry and the index")
	if len(args) == 0 || len(args[0]) == 0 || args[0][0] == '-' {
		return errors.New("usage: pki DIR [--user NAME]")
	}
	dir := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	p, ca, caKey, err := openCA(dir)
	if err != nil {
		return err
	}
	if !exists(p("server.pem")) || !exists(p("server.key")) || newer(p("ca.pem"), p("server.pem")) {
		if err := makeServer(ca, caKey, p("server.pem"), p("server.key")); err != nil {
			return err
		}
	}
	if !exists(p("password")) {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		if err := atomicfile.Write(p("password"), []byte(hex.EncodeToString(b)), 0o600); err != nil {
			return err
		}
	}
	pw, err := os.ReadFile(p("password"))
	if err != nil {
		return err
	}
	if ok := checkHtpasswd(p("htpasswd"), *user, pw); !ok {
		h, err := bcrypt.GenerateFromPassword(pw, bcrypt.DefaultCost)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(p("htpasswd"), []byte(*user+":"+string(h)+"\n"), 0o600); err != nil {
			return err
		}
	}
	if err := atomicfile.Write(p("basic-auth"), []byte(*user+":"+string(pw)+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "pki: CA %s, server certificate %s for 127.0.0.1, ::1, localhost; login %s\n", p("ca.pem"), p("server.pem"), *user)
	return nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func newer(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && sa.ModTime().After(sb.ModTime())
}

// checkHtpasswd reports whether the file holds user's bcrypt of pw.
func checkHtpasswd(path, user string, pw []byte) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var u, h string
	if n, _ := fmt.Sscanf(string(b), "%s", &u); n != 1 {
		return false
	}
	for i := 0; i < len(u); i++ {
		if u[i] == ':' {
			u, h = u[:i], u[i+1:]
			break
		}
	}
	return u == user && bcrypt.CompareHashAndPassword([]byte(h), pw) == nil
}

// openCA makes dir and loads its CA (ca.pem, ca.key), making one the first
// time; p names a file in dir.
func openCA(dir string) (p func(string) string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	p = func(n string) string { return filepath.Join(dir, n) }
	ca, caKey, err = loadOrMakeCA(p("ca.pem"), p("ca.key"))
	return p, ca, caKey, err
}

func loadOrMakeCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	if cb, err := os.ReadFile(certPath); err == nil {
		kb, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, nil, err
		}
		cblk, _ := pem.Decode(cb)
		kblk, _ := pem.Decode(kb)
		if cblk == nil || kblk == nil {
			return nil, nil, fmt.Errorf("%s or %s: not PEM", certPath, keyPath)
		}
		cert, err := x509.ParseCertificate(cblk.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", certPath, err)
		}
		key, err := x509.ParseECPrivateKey(kblk.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", keyPath, err)
		}
		if time.Now().Before(cert.NotAfter.Add(-24 * time.Hour)) {
			return cert, key, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "imagectl test CA", Organization: []string{"imagectl make up"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(90 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(keyPath, key); err != nil {
		return nil, nil, err
	}
	return cert, key, atomicfile.Write(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func makeServer(ca *x509.Certificate, caKey *ecdsa.PrivateKey, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     ca.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return atomicfile.Write(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	b, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: b}), 0o600)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}
