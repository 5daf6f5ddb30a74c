package build

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/moby/buildkit/client"

	"imagectl/internal/lock"
)

// Builder is a buildkitd that builds one platform of a multi-platform
// lock or build: --builder linux/arm64=tcp://arm-builder:1234.
type Builder struct {
	// Platform is "linux/arm64".
	Platform string
	// Addr is the buildkitd address (tcp://HOST:PORT, unix:///PATH, or any
	// scheme buildctl's --addr takes).
	Addr string
}

func (b Builder) String() string { return b.Platform + "=" + b.Addr }

// ParseBuilder parses PLATFORM=ADDRESS ("linux/arm64=tcp://arm-builder:1234").
func ParseBuilder(s string) (Builder, error) {
	plat, addr, ok := strings.Cut(s, "=")
	if !ok || plat == "" || addr == "" {
		return Builder{}, fmt.Errorf("want PLATFORM=ADDRESS, e.g. linux/arm64=tcp://arm-builder:1234")
	}
	pname, err := lock.ParsePlatformName(plat)
	if err != nil {
		return Builder{}, err
	}
	u, err := url.Parse(addr)
	if err != nil || u.Scheme == "" || !strings.Contains(addr, "://") {
		return Builder{}, fmt.Errorf("address %q: want a buildkitd address such as tcp://HOST:PORT or unix:///PATH", addr)
	}
	if u.Scheme == "tcp" && (u.Hostname() == "" || u.Port() == "") {
		return Builder{}, fmt.Errorf("address %q: want tcp://HOST:PORT", addr)
	}
	return Builder{Platform: pname, Addr: addr}, nil
}

// ParseBuilders parses every value; a platform given twice is an error.
func ParseBuilders(values []string) ([]Builder, error) {
	seen := map[string]string{}
	var bs []Builder
	for _, v := range values {
		b, err := ParseBuilder(v)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", v, err)
		}
		if prev, ok := seen[b.Platform]; ok {
			return nil, fmt.Errorf("%q: %s has a builder already (%s)", v, b.Platform, prev)
		}
		seen[b.Platform] = v
		bs = append(bs, b)
	}
	return bs, nil
}

// CheckBuilders fails when a builder is for a platform l does not have,
// naming the ones it has.
func CheckBuilders(l *lock.Lock, bs []Builder) error {
	for _, b := range bs {
		if _, err := l.ForPlatform(b.Platform); err != nil {
			return fmt.Errorf("builder %s: %w", b, err)
		}
	}
	return nil
}

// TLS is the client side of a buildkitd served over TCP with TLS
// (buildkitd --tlscacert --tlscert --tlskey), as buildctl's flags of the
// same names give it.
type TLS struct {
	// CACert verifies the server (--tlscacert). Empty: the system pool.
	CACert string
	// Cert and Key are the client's certificate and key (--tlscert,
	// --tlskey), for a buildkitd that asks for one (mutual TLS).
	Cert, Key string
	// ServerName is the name the server's certificate must carry
	// (--tlsservername). Empty: the address's host.
	ServerName string
}

// Enabled says whether any TLS setting is given.
func (t TLS) Enabled() bool { return t != TLS{} }

// ClientOptions are the buildkit client options of addr: TLS
// (client.WithServerConfig, client.WithCredentials) for a tcp:// address
// when any TLS setting is given, none for other addresses (a unix socket
// is not TLS).
func (t TLS) ClientOptions(addr string) ([]client.ClientOpt, error) {
	if !t.Enabled() || !strings.HasPrefix(addr, "tcp://") {
		return nil, nil
	}
	if (t.Cert == "") != (t.Key == "") {
		return nil, errors.New("--tlscert and --tlskey go together")
	}
	for _, f := range []struct{ flag, path string }{{"--tlscacert", t.CACert}, {"--tlscert", t.Cert}, {"--tlskey", t.Key}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("%s %s: %w", f.flag, f.path, err)
		}
	}
	var opts []client.ClientOpt
	if t.CACert != "" {
		opts = append(opts, client.WithServerConfig(t.ServerName, t.CACert))
	} else {
		opts = append(opts, client.WithServerConfigSystem(t.ServerName))
	}
	if t.Cert != "" {
		opts = append(opts, client.WithCredentials(t.Cert, t.Key))
	}
	return opts, nil
}

// DialBuilders connects to every builder (Dial, with t's TLS for the
// tcp:// ones) and returns their WithPlatformClient options and a function
// that closes them. A builder that does not answer is an UnavailableError
// naming it; the ones already dialed are closed.
func DialBuilders(ctx context.Context, bs []Builder, t TLS, timeout time.Duration) ([]Option, func(), error) {
	var clients []*client.Client
	closeAll := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	var opts []Option
	for _, b := range bs {
		copts, err := t.ClientOptions(b.Addr)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("builder %s: %w", b, err)
		}
		c, err := Dial(ctx, b.Addr, timeout, copts...)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("builder of %s: %w", b.Platform, err)
		}
		clients = append(clients, c)
		opts = append(opts, WithPlatformClient(b.Platform, c))
	}
	return opts, closeAll, nil
}
