package main

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestK8sPKI: the apiserver's and the kubelet's certificates verify for
// 127.0.0.1 against the CA, the clients carry the identities RBAC and the
// Node authorizer expect, the kubeconfigs name the files and the server,
// and a second run keeps every certificate.
func TestK8sPKI(t *testing.T) {
	dir := t.TempDir()
	args := []string{dir, "--server", "https://127.0.0.1:6443", "--node", "127.0.0.1"}
	if err := run(append([]string{"k8s"}, args...)); err != nil {
		t.Fatalf("run(k8s) = %v", err)
	}
	cert := func(n string) *x509.Certificate {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatalf("%s: not PEM", n)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert("ca.pem"))
	for _, n := range []string{"apiserver.pem", "kubelet.pem"} {
		if _, err := cert(n).Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
			t.Errorf("%s does not verify for 127.0.0.1: %v", n, err)
		}
	}
	for n, want := range map[string][2]string{
		"admin.pem":          {"imagectl-admin", "system:masters"},
		"kubelet-client.pem": {"system:node:127.0.0.1", "system:nodes"},
		"scheduler.pem":      {"system:kube-scheduler", ""},
	} {
		c := cert(n)
		if c.Subject.CommonName != want[0] || (want[1] != "" && !slices.Contains(c.Subject.Organization, want[1])) {
			t.Errorf("%s subject = %v, want CN %s O %s", n, c.Subject, want[0], want[1])
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s does not verify as a client certificate: %v", n, err)
		}
	}
	kc, err := os.ReadFile(filepath.Join(dir, "kubelet.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server: https://127.0.0.1:6443", filepath.Join(dir, "kubelet-client.pem"), filepath.Join(dir, "ca.pem")} {
		if !strings.Contains(string(kc), want) {
			t.Errorf("kubelet.kubeconfig does not name %q:\n%s", want, kc)
		}
	}
	before := cert("apiserver.pem").SerialNumber
	if err := run(append([]string{"k8s"}, args...)); err != nil {
		t.Fatalf("second run(k8s) = %v", err)
	}
	if after := cert("apiserver.pem").SerialNumber; after.Cmp(before) != 0 {
		t.Errorf("second run remade apiserver.pem (serial %v, was %v)", after, before)
	}
}
