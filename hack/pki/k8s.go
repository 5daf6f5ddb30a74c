package main

// pki k8s: the certificates and kubeconfigs of the local Kubernetes
// cluster hack/k8s.sh starts, in DIR:
//
//	pki k8s DIR --server https://127.0.0.1:PORT --node NODE
//
// A CA (ca.pem, ca.key, as for the private services); the apiserver's
// serving certificate for the loopback names and the first service IP
// (apiserver.pem/.key); the kubelet's serving certificate
// (kubelet.pem/.key); client certificates for admin (system:masters), the
// controller-manager, the scheduler, the node (system:node:NODE in
// system:nodes) and the apiserver's calls to the kubelet; the
// service-account signing key (sa.key, sa.pub); and one kubeconfig per
// client (admin.kubeconfig, ...). Existing files are kept while the CA
// stays, so a rerun converges; every file is written to a temporary name
// and renamed. Nothing secret is printed.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"imagectl/internal/atomicfile"
)

type client struct {
	file, cn string
	orgs     []string
}

func runK8s(args []string) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return errors.New("usage: pki k8s DIR --server URL --node NAME")
	}
	dir := args[0]
	fs := flag.NewFlagSet("pki k8s", flag.ContinueOnError)
	server := fs.String("server", "", "the apiserver's URL the kubeconfigs name")
	node := fs.String("node", "", "the node's name")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *server == "" || *node == "" {
		return errors.New("--server and --node are required")
	}
	p, ca, caKey, err := openCA(dir)
	if err != nil {
		return err
	}
	// A new CA (first run, or the old one near its end) remakes every leaf.
	fresh := newer(p("ca.pem"), p("admin.pem")) || !exists(p("admin.pem"))
	servers := []struct {
		file string
		ips  []string
		dns  []string
	}{
		{"apiserver", []string{"127.0.0.1", "::1", "10.96.0.1"}, []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{"kubelet", []string{"127.0.0.1", "::1"}, []string{"localhost", *node}},
	}
	for _, s := range servers {
		if !fresh && exists(p(s.file+".pem")) && exists(p(s.file+".key")) {
			continue
		}
		tmpl := leaf(s.file, nil, x509.ExtKeyUsageServerAuth)
		for _, ip := range s.ips {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
		}
		tmpl.DNSNames = s.dns
		if err := issue(ca, caKey, tmpl, p(s.file+".pem"), p(s.file+".key")); err != nil {
			return err
		}
	}
	clients := []client{
		{"admin", "imagectl-admin", []string{"system:masters"}},
		{"controller-manager", "system:kube-controller-manager", nil},
		{"scheduler", "system:kube-scheduler", nil},
		{"kubelet-client", "system:node:" + *node, []string{"system:nodes"}},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}},
	}
	for _, c := range clients {
		if fresh || !exists(p(c.file+".pem")) || !exists(p(c.file+".key")) {
			if err := issue(ca, caKey, leaf(c.cn, c.orgs, x509.ExtKeyUsageClientAuth), p(c.file+".pem"), p(c.file+".key")); err != nil {
				return err
			}
		}
		if c.file == "apiserver-kubelet-client" {
			continue
		}
		name := c.file
		if name == "kubelet-client" {
			name = "kubelet"
		}
		if err := atomicfile.Write(p(name+".kubeconfig"), kubeconfig(*server, p("ca.pem"), p(c.file+".pem"), p(c.file+".key")), 0o600); err != nil {
			return err
		}
	}
	if fresh || !exists(p("sa.key")) || !exists(p("sa.pub")) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			return err
		}
		if err := writeKey(p("sa.key"), k); err != nil {
			return err
		}
		if err := atomicfile.Write(p("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// kubeconfig names the files, so that a kubeconfig stays valid while the
// certificates it points at are kept.
func kubeconfig(server, ca, cert, key string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: imagectl-local
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: user
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: imagectl-local
  context:
    cluster: imagectl-local
    user: user
current-context: imagectl-local
`, server, ca, cert, key)
}

func leaf(cn string, orgs []string, usage x509.ExtKeyUsage) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

func issue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing %s: %w", certPath, err)
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return atomicfile.Write(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}
