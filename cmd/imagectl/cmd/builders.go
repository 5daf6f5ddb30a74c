package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/spf13/cobra"

	"imagectl/internal/build"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/spec"
)

// builderFlags are --builder (a buildkitd per platform) and buildctl's
// TLS flags, for lock, build and release.
type builderFlags struct {
	values []string
	tls    build.TLS
}

func (f *builderFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.values, "builder", nil, "PLATFORM=ADDRESS: resolve and build this platform on its own buildkitd, e.g. linux/arm64=tcp://arm-builder:1234 (repeatable; the other platforms use --addr)")
	fl.StringVar(&f.tls.CACert, "tlscacert", "", "CA certificate that tcp:// buildkitd addresses (--addr, --builder) must be signed by (default: the system pool, when any TLS flag is set)")
	fl.StringVar(&f.tls.Cert, "tlscert", "", "client certificate for tcp:// buildkitd addresses (mutual TLS; with --tlskey)")
	fl.StringVar(&f.tls.Key, "tlskey", "", "client key for tcp:// buildkitd addresses (with --tlscert)")
	fl.StringVar(&f.tls.ServerName, "tlsservername", "", "server name the buildkitd certificates must carry (default: the address's host)")
}

// builders parses --builder; a bad value is a usage error naming it.
func (f *builderFlags) builders() ([]build.Builder, error) {
	bs, err := build.ParseBuilders(f.values)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--builder %w", err))
	}
	return bs, nil
}

// clientOptions are the TLS client options of addr.
func (f *builderFlags) clientOptions(addr string) ([]client.ClientOpt, error) {
	opts, err := f.tls.ClientOptions(addr)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("buildkitd %s: %w", addr, err))
	}
	return opts, nil
}

// lockOptions route each --builder platform's jobs, and give addr its TLS.
func (f *builderFlags) lockOptions(addr string) ([]resolve.Option, error) {
	bs, err := f.builders()
	if err != nil {
		return nil, err
	}
	copts, err := f.clientOptions(addr)
	if err != nil {
		return nil, err
	}
	opts := []resolve.Option{resolve.WithBuildkitOptions(copts...)}
	for _, b := range bs {
		bopts, err := f.clientOptions(b.Addr)
		if err != nil {
			return nil, err
		}
		opts = append(opts, resolve.WithPlatformBuildkit(b.Platform, b.Addr, bopts...))
	}
	return opts, nil
}

// buildOptions dial every --builder; the returned function closes them.
func (f *builderFlags) buildOptions(ctx context.Context, timeout time.Duration) ([]build.Option, func(), error) {
	bs, err := f.builders()
	if err != nil {
		return nil, nil, err
	}
	for _, b := range bs {
		if _, err := f.clientOptions(b.Addr); err != nil {
			return nil, nil, err
		}
	}
	opts, closeAll, err := build.DialBuilders(ctx, bs, f.tls, timeout)
	if err != nil {
		return nil, nil, err
	}
	return opts, closeAll, nil
}

// dial connects to the default buildkitd, addr, with its TLS.
func (f *builderFlags) dial(ctx context.Context, addr string, timeout time.Duration) (*client.Client, error) {
	copts, err := f.clientOptions(addr)
	if err != nil {
		return nil, err
	}
	return build.Dial(ctx, addr, timeout, copts...)
}

// releaseOptions are the lock and build options of --builder for a
// release of imgs; a builder for a platform none of them has is a usage
// error. The returned function closes the builders' clients.
func (f *builderFlags) releaseOptions(ctx context.Context, imgs []spec.Image, addr string, timeout time.Duration) ([]resolve.Option, []build.Option, func(), error) {
	lopts, err := f.lockOptions(addr)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := resolve.CheckPlatformBuilders(imgs, lopts...); err != nil {
		return nil, nil, nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--builder: %w", err))
	}
	bopts, closeAll, err := f.buildOptions(ctx, timeout)
	if err != nil {
		return nil, nil, nil, err
	}
	return lopts, bopts, closeAll, nil
}
