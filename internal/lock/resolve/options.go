package resolve

import (
	"fmt"
	"os"
	"strconv"

	"github.com/moby/buildkit/client"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/pyindex"
)

// Option configures Resolve and Upgrade.
type Option func(*options) error

type options struct {
	runner     Runner
	buildkit   string
	clientOpts []client.ClientOpt
	platforms  map[string]platformBuilder
	access     *auth.Access
	catalog    Catalog
	epoch      *int64
	packages   []string
	root       string
	proxyAddr  string
	indexCache string
}

func makeOptions(opts []Option) (*options, error) {
	o := &options{
		buildkit:   os.Getenv("BUILDKIT_HOST"),
		access:     auth.Default(),
		catalog:    defaultCatalog(),
		proxyAddr:  "127.0.0.1:0",
		indexCache: pyindex.DefaultCacheDir(),
	}
	if v, ok := os.LookupEnv("SOURCE_DATE_EPOCH"); ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want a non-negative integer of seconds", v)
		}
		o.epoch = &n
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.runner == nil {
		if o.buildkit == "" {
			return nil, fmt.Errorf("no BuildKit address: set BUILDKIT_HOST or pass --addr")
		}
		o.runner = &buildkitRunner{addr: o.buildkit, clientOpts: o.clientOpts}
	}
	return o, nil
}

// platformBuilder is where one platform's jobs run: a Runner, or a
// buildkitd address (made a runner once every option is known).
type platformBuilder struct {
	runner Runner
	addr   string
	opts   []client.ClientOpt
}

// runnerFor is the runner of platform p's jobs: WithPlatformRunner's or
// WithPlatformBuildkit's, else the default one.
func (o *options) runnerFor(p string) Runner {
	b, ok := o.platforms[p]
	switch {
	case !ok:
		return o.runner
	case b.runner != nil:
		return b.runner
	default:
		return &buildkitRunner{addr: b.addr, clientOpts: b.opts}
	}
}

func (o *options) setPlatform(platform string, b platformBuilder) error {
	name, err := lock.ParsePlatformName(platform)
	if err != nil {
		return fmt.Errorf("builder %w", err)
	}
	if o.platforms == nil {
		o.platforms = map[string]platformBuilder{}
	}
	o.platforms[name] = b
	return nil
}

// WithPlatformBuildkit runs the jobs of platform ("linux/arm64": its apt
// and pip steps, inside its base) on the buildkitd at addr, a builder of
// that architecture, natively instead of under emulation; opts are its
// client's (TLS: client.WithServerConfig, client.WithCredentials). An
// image without that platform does not use it. The default runs every
// platform on WithBuildkit's address.
func WithPlatformBuildkit(platform, addr string, opts ...client.ClientOpt) Option {
	return func(o *options) error {
		if addr == "" {
			return fmt.Errorf("buildkitd address of %s is empty", platform)
		}
		return o.setPlatform(platform, platformBuilder{addr: addr, opts: opts})
	}
}

// WithPlatformRunner runs the jobs of platform on r (tests use a fake).
// The default is WithPlatformBuildkit's builder, else WithRunner's, else
// WithBuildkit's.
func WithPlatformRunner(platform string, r Runner) Option {
	return func(o *options) error {
		if r == nil {
			return fmt.Errorf("runner of %s is nil", platform)
		}
		return o.setPlatform(platform, platformBuilder{runner: r})
	}
}

// WithBuildkitOptions sets the client options of WithBuildkit's buildkitd
// (TLS: client.WithServerConfig, client.WithCredentials). The default is
// none.
func WithBuildkitOptions(opts ...client.ClientOpt) Option {
	return func(o *options) error {
		o.clientOpts = append(o.clientOpts, opts...)
		return nil
	}
}

// WithBuildkit sets the buildkitd address the resolution steps run on.
// The default is $BUILDKIT_HOST.
func WithBuildkit(addr string) Option {
	return func(o *options) error {
		o.buildkit = addr
		return nil
	}
}

// WithRunner replaces BuildKit with another Runner (tests use a fake).
// The default runs every step as a BuildKit solve on WithBuildkit's address.
func WithRunner(r Runner) Option {
	return func(o *options) error {
		o.runner = r
		return nil
	}
}

// WithAccess sets the credentials and TLS trust of the lock: the base's
// registry (ggcr, and buildkitd through the session's auth provider), and
// the indexes (the routing proxy and the size requests ask them with the
// index credentials as basic auth and with the access's TLS trust; the pip
// step gets the credentials as a netrc secret mounted at /root/.netrc).
// Credentials in an index URL's userinfo are moved into it.
// None of them is written to the lock, a log, a layer or an error. The
// default is auth.Default(): the Docker config, the system trust store and
// no index credentials.
func WithAccess(a *auth.Access) Option {
	return func(o *options) error { return auth.SetAccess(&o.access, a) }
}

// WithCatalog sets the compatibility catalog. The default is the embedded
// catalog of internal/compat.
func WithCatalog(c Catalog) Option {
	return func(o *options) error {
		o.catalog = c
		return nil
	}
}

// WithSourceDateEpoch sets the lock's SOURCE_DATE_EPOCH. The default is
// $SOURCE_DATE_EPOCH when set, else the base image's creation time (0 when
// the base records none), so that re-locking the same inputs is byte-identical.
func WithSourceDateEpoch(sec int64) Option {
	return func(o *options) error {
		if sec < 0 {
			return fmt.Errorf("source date epoch %d is negative", sec)
		}
		o.epoch = &sec
		return nil
	}
}

// WithPackages limits Upgrade to the named packages (pip or apt names);
// every other locked package keeps its version. The default moves the
// whole periphery.
func WithPackages(names ...string) Option {
	return func(o *options) error {
		o.packages = append(o.packages, names...)
		return nil
	}
}

// WithRoot sets the directory that Source.Path is made relative to. The
// default is the working directory.
func WithRoot(dir string) Option {
	return func(o *options) error {
		o.root = dir
		return nil
	}
}

// WithIndexProxyAddr sets where the lock's index proxy listens while pip
// resolves: pip in the resolution step reaches the indexes only through it.
// The default is 127.0.0.1:0, which a buildkitd on this machine reaches
// (its OCI worker runs steps in the host's network); give an address the
// workers can reach when buildkitd runs elsewhere. Beyond loopback the
// proxy answers only URLs with a random token it makes at start (pip gets
// them): nobody else reaching the port is served, or sent upstream with
// the index credentials.
func WithIndexProxyAddr(addr string) Option {
	return func(o *options) error {
		o.proxyAddr = addr
		return nil
	}
}

// WithIndexCache sets the directory where the index proxy caches wheel
// metadata by the wheel's sha256, so a big wheel on an index without
// metadata files is read at most once. The default is
// $XDG_CACHE_HOME/imagectl/pyindex.
func WithIndexCache(dir string) Option {
	return func(o *options) error {
		o.indexCache = dir
		return nil
	}
}
