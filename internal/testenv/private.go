package testenv

import (
	"os"
	"strings"
	"testing"
)

// Private is what hack/private.sh (part of `make up`) started and wrote:
// a registry behind htpasswd over TLS and a wheel index behind basic auth
// over TLS, both with a certificate from a CA made at start-up, and the
// credentials as a platform team hands them to CI.
type Private struct {
	// Registry is the private registry, 127.0.0.1:PORT (HTTPS).
	Registry string
	// Index is the private wheel index, https://127.0.0.1:PORT/simple/.
	Index string
	// WheelsDir is the directory the private index serves.
	WheelsDir string
	// CA is the CA's certificate (PEM).
	CA string
	// DockerConfig is a DOCKER_CONFIG directory with the registry's login.
	DockerConfig string
	// Netrc is a netrc file with the index's login.
	Netrc string
	// Password is the one password of both (tests grep for it).
	Password string
}

// GetPrivate returns the private services, skipping (or, with
// IMAGECTL_E2E=1, failing) when `make up` did not start them.
func GetPrivate(t testing.TB) Private {
	t.Helper()
	p := Private{
		Registry:     os.Getenv("IMAGECTL_PRIVATE_REGISTRY"),
		Index:        os.Getenv("IMAGECTL_PRIVATE_INDEX"),
		WheelsDir:    os.Getenv("IMAGECTL_PRIVATE_WHEELS_DIR"),
		CA:           os.Getenv("IMAGECTL_PRIVATE_CA"),
		DockerConfig: os.Getenv("IMAGECTL_PRIVATE_DOCKER_CONFIG"),
		Netrc:        os.Getenv("IMAGECTL_PRIVATE_NETRC"),
	}
	missing := ""
	for k, v := range map[string]string{"IMAGECTL_PRIVATE_REGISTRY": p.Registry, "IMAGECTL_PRIVATE_INDEX": p.Index,
		"IMAGECTL_PRIVATE_CA": p.CA, "IMAGECTL_PRIVATE_DOCKER_CONFIG": p.DockerConfig, "IMAGECTL_PRIVATE_NETRC": p.Netrc,
		"IMAGECTL_PRIVATE_PASSWORD_FILE": os.Getenv("IMAGECTL_PRIVATE_PASSWORD_FILE")} {
		if v == "" {
			missing = k
		}
	}
	if missing == "" {
		b, err := os.ReadFile(os.Getenv("IMAGECTL_PRIVATE_PASSWORD_FILE"))
		if err != nil {
			t.Fatalf("reading the private services' password: %v", err)
		}
		p.Password = strings.TrimSpace(string(b))
		if p.Password == "" {
			t.Fatal("the private services' password file is empty")
		}
		return p
	}
	if os.Getenv("IMAGECTL_E2E") == "1" {
		t.Fatalf("IMAGECTL_E2E=1 but %s is not set: run the tests through `make test` (hack/private.sh starts the private registry and index)", missing)
	}
	t.Skipf("end-to-end test: %s is not set; `make test` starts the private registry and index", missing)
	return p
}
