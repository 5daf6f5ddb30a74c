package auth

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"imagectl/internal/exitcode"
)

// Error is a registry or index that refused access: 401 (no or wrong
// credentials) or 403 (credentials without the permission). It names the
// host and the credential source that was tried, never a secret.
type Error struct {
	// Kind is "registry" or "index".
	Kind string
	// Host is host[:port].
	Host string
	// Status is the HTTP status, 401 or 403.
	Status int
	// Source says which credentials were tried, e.g. "docker config
	// /root/.docker/config.json (auths entry for HOST)".
	Source string
	Err    error
}

func (e *Error) Error() string {
	what := "refused the credentials"
	if e.Status == http.StatusUnauthorized {
		what = "wants credentials it did not get or did not accept"
	}
	if e.Status == http.StatusForbidden {
		what = "denied access with the credentials given"
	}
	s := fmt.Sprintf("%s %s %s (%d %s); credentials tried: %s", e.Kind, e.Host, what, e.Status, http.StatusText(e.Status), e.Source)
	if e.Err != nil {
		s += ": " + Redact(e.Err.Error())
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode implements exitcode.Coder.
func (e *Error) ExitCode() int { return exitcode.AuthFailed }

// Denied reports whether status is 401 or 403.
func Denied(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// NotFound reports whether a registry answered 404 anywhere in err's
// chain (a ggcr transport.Error): the manifest, tag or blob asked for is
// not there. Every other error, a registry's 5xx or 401 included, is not.
func NotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// Classify turns a registry 401/403 anywhere in err's chain (a ggcr
// transport.Error) into an *Error naming the registry and the Docker
// config source tried; other errors, and errors already classified, come
// back as they are.
func (a *Access) Classify(err error) error {
	if err == nil {
		return nil
	}
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	var te *transport.Error
	if !errors.As(err, &te) || !Denied(te.StatusCode) {
		return err
	}
	host := ""
	if te.Request != nil && te.Request.URL != nil {
		host = te.Request.URL.Host
	}
	return &Error{Kind: "registry", Host: host, Status: te.StatusCode, Source: a.RegistrySource(host), Err: err}
}

// RegistrySource names the Docker config entry ggcr and BuildKit use for
// host: a credential helper, the credential store, an auths entry, or none
// (anonymous). It reads the config, never prints a secret.
func (a *Access) RegistrySource(host string) string {
	file := filepath.Join(a.dockerDir(), config.ConfigFileName)
	if _, err := os.Stat(file); err != nil {
		return fmt.Sprintf("docker config %s does not exist (anonymous)", file)
	}
	cf, err := config.Load(a.dockerDir())
	if err != nil {
		return fmt.Sprintf("docker config %s (unreadable: %v)", file, err)
	}
	if h, ok := cf.CredentialHelpers[host]; ok {
		return fmt.Sprintf("docker config %s (credential helper docker-credential-%s for %s)", file, h, host)
	}
	if _, ok := cf.AuthConfigs[host]; ok {
		return fmt.Sprintf("docker config %s (auths entry for %s)", file, host)
	}
	if cf.CredentialsStore != "" {
		return fmt.Sprintf("docker config %s (credential store docker-credential-%s)", file, cf.CredentialsStore)
	}
	return fmt.Sprintf("docker config %s (no entry for %s: anonymous)", file, host)
}
