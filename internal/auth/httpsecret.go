package auth

import (
	"net/url"
	"strings"
)

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
