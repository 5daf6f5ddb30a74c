package build

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/buildkit/client"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
)

// Option configures State, Definition and Solve.
type Option func(*options) error

type options struct {
	initPath     string
	platformInit map[string]string
	push         bool
	name         string
	tag          string
	ociLayout    string
	cacheFrom    []client.CacheOptionsEntry
	cacheTo      []client.CacheOptionsEntry
	status       chan *client.SolveStatus
	dialTimeout  time.Duration
	// pinged are the transports the registry checks authenticated, by
	// registry (set by Solve, for the read-back).
	pinged      map[string]http.RoundTripper
	rewrite     bool
	compression string
	prioritized []string
	access      *auth.Access
	clients     map[string]Client
}

// makeOptions applies every option, even after one fails, so that a
// status channel is always known (and closed) when an option is bad.
func makeOptions(opts ...Option) (*options, error) {
	o := &options{dialTimeout: 10 * time.Second, access: auth.Default()}
	var errs []error
	for _, opt := range opts {
		if err := opt(o); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	if o.initPath == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("locating imagectl-init beside the executable: %w", err)
		}
		o.initPath = filepath.Join(filepath.Dir(exe), "imagectl-init")
	}
	return o, nil
}

// WithInit sets the path of the init binary baked into the image as its
// entrypoint. The default is imagectl-init beside the running executable.
func WithInit(path string) Option {
	return func(o *options) error {
		if path == "" {
			return errors.New("init path is empty")
		}
		o.initPath = path
		return nil
	}
}

// WithPlatformInit sets the init binary of one platform ("linux/arm64").
// The default is WithInit's binary for linux/amd64 and
// imagectl-init-OS-ARCH beside it for the others.
func WithPlatformInit(platform, path string) Option {
	return func(o *options) error {
		if path == "" {
			return fmt.Errorf("init path for %s is empty", platform)
		}
		if o.platformInit == nil {
			o.platformInit = map[string]string{}
		}
		o.platformInit[platform] = path
		return nil
	}
}

// WithPush pushes the image by digest to the lock's staging repository (or
// the repository set with WithName). The default is not to push.
func WithPush(push bool) Option {
	return func(o *options) error { o.push = push; return nil }
}

// WithName sets the repository the image is pushed to. The default is the
// lock's staging repository (repos.staging).
func WithName(repo string) Option {
	return func(o *options) error { o.name = repo; return nil }
}

// WithTag also pushes the image under this tag once it is built. The default
// is no tag: the image is pushed by digest only.
func WithTag(tag string) Option {
	return func(o *options) error { o.tag = tag; return nil }
}

// WithOCILayout writes the image as an OCI layout directory at dir. The
// default is no layout.
func WithOCILayout(dir string) Option {
	return func(o *options) error {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("oci layout %q: %w", dir, err)
		}
		o.ociLayout = abs
		return nil
	}
}

// WithCacheFrom imports build cache, in buildctl's syntax:
// "type=registry,ref=REGISTRY/REPO:TAG". The default is no import.
func WithCacheFrom(specs ...string) Option {
	return func(o *options) error {
		for _, s := range specs {
			e, err := ParseCacheOption(s)
			if err != nil {
				return fmt.Errorf("--cache-from: %w", err)
			}
			o.cacheFrom = append(o.cacheFrom, e)
		}
		return nil
	}
}

// WithCacheTo exports build cache, in buildctl's syntax:
// "type=registry,ref=REGISTRY/REPO:TAG[,mode=max]". The default is no export.
func WithCacheTo(specs ...string) Option {
	return func(o *options) error {
		for _, s := range specs {
			e, err := ParseCacheOption(s)
			if err != nil {
				return fmt.Errorf("--cache-to: %w", err)
			}
			o.cacheTo = append(o.cacheTo, e)
		}
		return nil
	}
}

// WithStatus sends BuildKit's progress to ch; Solve closes ch when it
// returns. The default is to discard progress.
func WithStatus(ch chan *client.SolveStatus) Option {
	return func(o *options) error { o.status = ch; return nil }
}

// WithDialTimeout bounds how long Solve waits for buildkitd and the
// registries to answer before it gives up. The default is 10s.
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("dial timeout %v must be positive", d)
		}
		o.dialTimeout = d
		return nil
	}
}

// WithRewriteTimestamp sets BuildKit's exporter option rewrite-timestamp,
// which clamps every layer's file times to the lock's SOURCE_DATE_EPOCH at
// export, recompressing each layer on every export, cached or not. The
// install steps already clamp what they write (two clean builds give the
// same digest either way, see the end-to-end test), so it is off by
// default: on, a no-op rebuild of the demo takes ~5x longer (docs/build.md).
// The default is off.
func WithRewriteTimestamp(on bool) Option {
	return func(o *options) error { o.rewrite = on; return nil }
}

// Layer compressions WithCompression takes.
const (
	CompressionGzip         = "gzip"
	CompressionZstd         = "zstd"
	CompressionUncompressed = "uncompressed"
	// CompressionEstargz is gzip in eStargz's seekable form (BuildKit's
	// estargz exporter): a TOC at the end of each layer lets
	// stargz-snapshotter mount the image before its layers are fetched
	// and fetch a file when it is first read. Layers are OCI gzip layers
	// any runtime pulls; the TOC's digest is the layer descriptor's
	// containerd.io/snapshot/stargz/toc.digest annotation.
	CompressionEstargz = "estargz"
)

// WithCompression sets the layers' compression (BuildKit's exporter
// compression): gzip, zstd or uncompressed, forced on every layer, the
// base's too, so that the whole image has one format (without the force
// BuildKit reuses a layer's cached blob of another compression: a gzip
// export after a zstd one gave the zstd image, seen on the GPU machine).
// "estargz" (CompressionEstargz) makes layers a lazy pull can mount before
// they are fetched; WithPrioritizedFiles orders them. The default, "", is
// BuildKit's: gzip for new layers, cached blobs as they are.
func WithCompression(c string) Option {
	return func(o *options) error {
		switch c {
		case "":
			o.compression = ""
		case CompressionGzip, CompressionZstd, CompressionUncompressed, CompressionEstargz:
			o.compression = c
		default:
			return fmt.Errorf("layer compression %q: want gzip, zstd, estargz or uncompressed", c)
		}
		return nil
	}
}

// WithAccess sets the credentials and TLS trust of every registry and HTTP
// source the build touches: the preflight and the read-back through ggcr,
// buildkitd's pulls and pushes through the session's auth provider, and an
// auth-header secret on each HTTP fetch whose host has an index credential.
// The default is auth.Default(): the Docker config, the system trust store,
// no index credentials.
func WithAccess(a *auth.Access) Option {
	return func(o *options) error { return auth.SetAccess(&o.access, a) }
}

// WithPlatformClient solves the image of platform ("linux/arm64") on c,
// a buildkitd of that architecture, instead of Solve's client. A lock of
// several platforms is always built one platform at a time, each image
// pushed by digest, and the OCI image index assembled from them, so its
// digest does not depend on how many builders built it. A platform the
// lock does not have is not built (imagectl build refuses it; release
// passes one set of builders to locks of different platforms). The
// default is Solve's client for every platform.
func WithPlatformClient(platform string, c Client) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("builder of %s is nil", platform)
		}
		name, err := lock.ParsePlatformName(platform)
		if err != nil {
			return fmt.Errorf("builder %w", err)
		}
		if o.clients == nil {
			o.clients = map[string]Client{}
		}
		o.clients[name] = c
		return nil
	}
}
