package auth

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	netrc "github.com/jdx/go-netrc"
)

// Credential is a login and password for an index host, with where it
// came from (for error messages: never the password).
type Credential struct {
	Login    string
	Password string
	// Source names where the credential was read, e.g. "netrc /root/.netrc".
	Source string
}

// readNetrc reads machine entries from a netrc file with
// github.com/jdx/go-netrc. Machines are host names (netrc has no ports);
// the "default" entry is ignored: credentials go only to named hosts.
func readNetrc(path string) (creds map[string]Credential, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("netrc: %w", err)
	}
	// The library indexes tokens without bounds checks: a truncated file
	// ("machine" as the last word) must be an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			creds, err = nil, fmt.Errorf("netrc %s: malformed (an entry is cut short)", path)
		}
	}()
	n, err := netrc.ParseString(string(b))
	if err != nil {
		return nil, fmt.Errorf("netrc %s: %w", path, err)
	}
	creds = map[string]Credential{}
	for _, m := range n.Machines() {
		if m.IsDefault || m.Name == "" {
			continue
		}
		login, pw := m.Get("login"), m.Get("password")
		if login == "" && pw == "" {
			continue
		}
		creds[m.Name] = Credential{Login: login, Password: pw, Source: "netrc " + path}
	}
	return creds, nil
}

// SplitUserinfo moves the credentials out of an index URL: it returns the
// URL without user:password@ and the credential it carried (nil when none).
func SplitUserinfo(raw string) (string, *Credential, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, fmt.Errorf("index URL %s: not a URL", Redact(raw))
	}
	if u.User == nil {
		return raw, nil, nil
	}
	pw, _ := u.User.Password()
	c := &Credential{Login: u.User.Username(), Password: pw, Source: "the index URL's user:password@ (" + u.Host + ")"}
	u.User = nil
	return u.String(), c, nil
}

// WithIndexCredential returns a copy of a that sends c to host (a host
// name, or host:port for that port only).
func (a *Access) WithIndexCredential(host string, c Credential) *Access {
	b := *a
	b.index = maps.Clone(a.index)
	b.index[host] = c
	return &b
}

// IndexCredential returns the credential for rawURL's host: an entry for
// host:port first, then one for the host name (netrc's machines).
func (a *Access) IndexCredential(rawURL string) (Credential, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return Credential{}, false
	}
	if c, ok := a.index[u.Host]; ok {
		return c, true
	}
	c, ok := a.index[u.Hostname()]
	return c, ok
}

// IndexSource names where credentials for rawURL's host were (or would
// have been) looked up, for error messages.
func (a *Access) IndexSource(rawURL string) string {
	if c, ok := a.IndexCredential(rawURL); ok {
		return c.Source
	}
	if a.cfg.NetrcFile != "" {
		return fmt.Sprintf("netrc %s (no machine for this host: anonymous)", a.cfg.NetrcFile)
	}
	return "none (no netrc given: anonymous)"
}

// HasIndexCredentials reports whether any index credential is known.
func (a *Access) HasIndexCredentials() bool { return len(a.index) > 0 }

// Netrc renders every index credential as netrc content (for pip, which
// reads /root/.netrc), written with github.com/jdx/go-netrc. Entries for
// host:port become entries for the host name: netrc has no ports.
func (a *Access) Netrc() []byte {
	n := netrc.New("")
	for _, h := range slices.Sorted(maps.Keys(a.index)) {
		c := a.index[h]
		if i := strings.LastIndex(h, ":"); i > 0 && !strings.Contains(h[i:], "]") {
			h = h[:i]
		}
		n.AddMachine(h, c.Login, c.Password)
	}
	return []byte(n.Render())
}

// AuthHeader is the Authorization header value for rawURL ("" when no
// credential applies).
func (a *Access) AuthHeader(rawURL string) string {
	c, ok := a.IndexCredential(rawURL)
	if !ok {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.Login+":"+c.Password))
}

// Redact replaces user:password@ in URLs within s with ***@.
func Redact(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+3])
		s = s[i+3:]
		end := strings.IndexAny(s, "/ \t\n\"'")
		if end < 0 {
			end = len(s)
		}
		if at := strings.LastIndex(s[:end], "@"); at >= 0 {
			b.WriteString("***@")
			s = s[at+1:]
		}
	}
}
