// Package bkauth hands imagectl's registry access to BuildKit: the session
// attachables a solve carries so that buildkitd's pulls and pushes use the
// same credentials and CAs as the Go side (internal/auth). It is the only
// part of access that links BuildKit, so that packages which only read
// registries (promote, scan, verify) do not.
package bkauth

import (
	"io"

	"github.com/docker/cli/cli/config"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/session/auth/authprovider"
	"github.com/moby/buildkit/session/secrets/secretsprovider"

	"imagectl/internal/auth"
)

// Session returns what a BuildKit solve attaches to its session so that
// buildkitd's pulls and pushes use the same credentials as ggcr: BuildKit's
// Docker auth provider over the same Docker config, with the CA files as
// the TLS roots of each registry in registries (used where the session
// itself talks to a registry, i.e. token endpoints), and one secrets
// provider holding secrets (pip's netrc, HTTP auth headers; see
// auth.Access.HTTPAuthSecret). buildkitd's own connections to a registry trust what its
// buildkitd.toml ([registry."host"] ca) and its system store say.
func Session(a *auth.Access, registries []string, secrets map[string][]byte) []session.Attachable {
	cf, err := config.Load(auth.DockerConfigDir())
	if err != nil {
		// An unreadable config is anonymous here; ggcr reports it on the
		// Go side, where every stage resolves the base or pings first.
		cf = config.LoadDefaultConfigFile(io.Discard)
	}
	tlsConfigs := map[string]*authprovider.AuthTLSConfig{}
	for _, r := range registries {
		if r == "" {
			continue
		}
		tlsConfigs[r] = &authprovider.AuthTLSConfig{RootCAs: a.CAFiles()}
	}
	out := []session.Attachable{authprovider.NewDockerAuthProvider(authprovider.DockerAuthProviderConfig{
		AuthConfigProvider: authprovider.LoadAuthConfig(cf),
		TLSConfigs:         tlsConfigs,
	})}
	if len(secrets) > 0 {
		out = append(out, secretsprovider.FromMap(secrets))
	}
	return out
}
