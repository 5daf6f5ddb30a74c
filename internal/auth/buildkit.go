package auth

import (
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/docker/cli/cli/config"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/session/auth/authprovider"
	"github.com/moby/buildkit/session/secrets/secretsprovider"
)

// Session returns what a BuildKit solve attaches to its session so that
// buildkitd's pulls and pushes use the same credentials as ggcr: BuildKit's
// Docker auth provider over the same Docker config, with the CA files as
// the TLS roots of each registry in registries (used where the session
// itself talks to a registry, i.e. token endpoints), and one secrets
// provider holding secrets (pip's netrc, HTTP auth headers; see
// HTTPAuthSecret). buildkitd's own connections to a registry trust what its
// buildkitd.toml ([registry."host"] ca) and its system store say.
func (a *Access) Session(registries []string, secrets map[string][]byte) []session.Attachable {
	cf, err := config.Load(a.dockerDir())
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
		tlsConfigs[r] = &authprovider.AuthTLSConfig{RootCAs: slices.Clone(a.cfg.CAFiles)}
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

// httpSecretPrefix starts the BuildKit secret IDs of HTTP auth headers.
const httpSecretPrefix = "imagectl-http-auth-"

// HTTPAuthSecret returns the BuildKit secret ID and value (the
// Authorization header) for an HTTP source at rawURL, for
// llb.AuthHeaderSecret: the LLB names only the ID, which is made from the
// host; the header travels in the session. ok is false when no credential
// applies to rawURL's host.
func (a *Access) HTTPAuthSecret(rawURL string) (id string, value []byte, ok bool) {
	h := a.AuthHeader(rawURL)
	if h == "" {
		return "", nil, false
	}
	u, _ := url.Parse(rawURL)
	key := u.Hostname()
	if _, exact := a.index[u.Host]; exact {
		key = u.Host
	}
	return httpSecretPrefix + strings.NewReplacer(":", "-", "[", "", "]", "").Replace(key), []byte(h), true
}

// HTTPAuthSecrets returns the secrets for every URL in urls that has a
// credential, by secret ID.
func (a *Access) HTTPAuthSecrets(urls []string) map[string][]byte {
	out := map[string][]byte{}
	for _, u := range urls {
		if id, v, ok := a.HTTPAuthSecret(u); ok {
			out[id] = v
		}
	}
	return out
}
