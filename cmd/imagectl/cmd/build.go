package cmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/util/progress/progressui"
	"github.com/spf13/cobra"

	"imagectl/internal/build"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/sign"
)

// buildFlags are build's flags.
type buildFlags struct {
	out                outputFlag
	lockPath, addr     string
	progress, initPath string
	ociLayout, tag     string
	repo               string
	push               bool
	rewrite            bool
	compression        string
	prioritizedFile    string
	cacheFrom, cacheTo []string
	timeout            time.Duration
	sign               bool
	signFlags          signFlags
	builder            sign.Builder
	builders           builderFlags
}

func newBuildCmd() *cobra.Command {
	var f buildFlags
	cmd := &cobra.Command{
		Use:   "build --lock images/NAME/lock.json [--push] [--oci-layout DIR]",
		Short: "Build the image of a lock with BuildKit; print its digest",
		Long: `Build turns a lock into an image on buildkitd: the base by digest, every deb and
wheel fetched from its locked URL and checked against its locked sha256, installed
with the network off, in layers ordered by how rarely they change (base, system
packages, venv, one layer per big wheel, periphery wheels, the init and its config).
Every step clamps the times of what it writes to the lock's SOURCE_DATE_EPOCH, so
two clean builds give the same digest.

The digest goes to stdout; --output json adds the size and the layers. Progress
goes to stderr. buildkitd is --addr, else $BUILDKIT_HOST.

A lock of several platforms is built one image per platform, each pushed by
digest, and the OCI image index assembled from them and pushed by digest (the
tag, with --tag, moved last). --builder PLATFORM=ADDRESS builds that platform
on a buildkitd of its own (a native arm64 builder instead of emulation); the
index is the same whichever builders built it. --tlscacert, --tlscert and
--tlskey (buildctl's) apply to tcp:// addresses. With a registry cache, each
platform caches under the tag with -OS-ARCH appended.`,
		Example: `  # Build and push by digest to the lock's staging repository
  imagectl build --lock images/demo/lock.json --push

  # eStargz layers with the files the last verify's first CUDA step opened first
  imagectl build --lock images/demo/lock.json --push --compression estargz \
    --prioritized-files images/demo/startup-files.txt

  # Build, push and sign in one go (signature + lock, SBOM, provenance attestations)
  IMAGECTL_SIGNING_PASSWORD=... imagectl build --lock images/demo/lock.json --push \
    --sign --key keys/cosign.key --source-commit $(git rev-parse HEAD)

  # Write an OCI layout as well, share cache through the registry, JSON details
  imagectl build --lock images/demo/lock.json --push --oci-layout out/demo \
    --cache-from type=registry,ref=127.0.0.1:5000/cache/demo:main \
    --cache-to type=registry,ref=127.0.0.1:5000/cache/demo:main,mode=max -o json

  # Two platforms, arm64 natively on its own builder over mutual TLS
  imagectl build --lock images/demo/lock.json --push \
    --builder linux/arm64=tcp://arm-builder:1234 \
    --tlscacert certs/ca.pem --tlscert certs/cert.pem --tlskey certs/key.pem`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := f.out.json()
			if err != nil {
				return err
			}
			l, signOpts, err := f.check(cmd)
			if err != nil {
				return err
			}
			c, opts, closeBuilders, err := f.options(cmd)
			if err != nil {
				return err
			}
			defer closeBuilders()
			defer c.Close()
			res, err := solveShown(cmd.Context(), cmd.ErrOrStderr(), f.progress, c, l, opts)
			if err != nil {
				return err
			}
			if f.sign {
				if err := signBuilt(cmd, c, res, l, f.builder, signOpts); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), res.Digest)
			return err
		},
	}
	f.add(cmd)
	return cmd
}

func (bf *buildFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&bf.sign, "sign", false, "after the push, sign the digest and attach the lock, SPDX and CycloneDX SBOMs and SLSA provenance attestations")
	bf.signFlags.add(cmd)
	f.StringVar(&bf.builder.ID, "builder-id", sign.DefaultBuilderID, "provenance: the builder's URI")
	f.StringVar(&bf.builder.SourceCommit, "source-commit", "", "provenance: git commit of the spec and lock")
	addOutputFlag(cmd, &bf.out)
	f.StringVar(&bf.lockPath, "lock", "", "the lock to build (images/NAME/lock.json)")
	f.StringVar(&bf.addr, "addr", "", "buildkitd address (default $BUILDKIT_HOST, else "+build.DefaultAddr+")")
	f.BoolVar(&bf.push, "push", false, "push the image by digest to the lock's staging repository")
	f.StringVar(&bf.repo, "repo", "", "push to this repository instead of the lock's staging repository")
	f.StringVar(&bf.tag, "tag", "", "also push under this tag (default: by digest only)")
	f.StringVar(&bf.ociLayout, "oci-layout", "", "also write the image as an OCI layout directory")
	f.StringArrayVar(&bf.cacheFrom, "cache-from", nil, "import build cache, e.g. type=registry,ref=REPO:TAG (repeatable)")
	f.StringArrayVar(&bf.cacheTo, "cache-to", nil, "export build cache, e.g. type=registry,ref=REPO:TAG,mode=max (repeatable)")
	f.StringVar(&bf.progress, "progress", "auto", "progress output on stderr: auto, tty, plain, rawjson or quiet")
	f.StringVar(&bf.initPath, "init", "", "the init binary to bake in (default: imagectl-init beside imagectl)")
	f.DurationVar(&bf.timeout, "timeout", 10*time.Second, "how long to wait for buildkitd and the registries to answer")
	f.StringVar(&bf.compression, "compression", "", "layer compression forced on every layer: gzip, zstd (faster to pull and unpack), estargz (lazily pullable by stargz-snapshotter) or uncompressed (default: BuildKit's gzip, cached blobs reused as they are)")
	f.StringVar(&bf.prioritizedFile, "prioritized-files", "", "with --compression estargz: a file of image paths, one per line, that the layers hold first so a lazy pull prefetches them (what `imagectl verify --startup-files` recorded)")
	bf.builders.add(cmd)
	f.BoolVar(&bf.rewrite, "rewrite-timestamp", false, "also have BuildKit rewrite every layer's times at export (slow; the steps already clamp them)")
}

// check reads the lock and the signing options and checks the flags
// against them, before anything is dialled.
func (f *buildFlags) check(cmd *cobra.Command) (*lock.Lock, []sign.Option, error) {
	if f.lockPath == "" {
		return nil, nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--lock is required"))
	}
	var signOpts []sign.Option
	if f.sign {
		if !f.push {
			return nil, nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--sign needs --push: signatures live beside the image in its registry"))
		}
		var err error
		if signOpts, err = f.signFlags.options(cmd, cmd.InOrStdin()); err != nil {
			return nil, nil, err
		}
	}
	l, err := lock.Read(f.lockPath)
	if err != nil {
		return nil, nil, err
	}
	bs, err := f.builders.builders()
	if err != nil {
		return nil, nil, err
	}
	if err := build.CheckBuilders(l, bs); err != nil {
		return nil, nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--builder: %w", err))
	}
	switch progressui.DisplayMode(f.progress) {
	case progressui.AutoMode, progressui.TtyMode, progressui.PlainMode, progressui.RawJSONMode, progressui.QuietMode:
	default:
		return nil, nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--progress %q: want auto, tty, plain, rawjson or quiet", f.progress))
	}
	return l, signOpts, nil
}

// options dials buildkitd (and the --builder ones) and returns the build
// options the flags name; closeBuilders closes the --builder clients.
func (f *buildFlags) options(cmd *cobra.Command) (_ *client.Client, _ []build.Option, closeBuilders func(), err error) {
	ctx := cmd.Context()
	opts := []build.Option{build.WithPush(f.push), build.WithDialTimeout(f.timeout), build.WithAccess(accessOf(cmd)),
		build.WithRewriteTimestamp(f.rewrite), build.WithCompression(f.compression), build.WithCacheFrom(f.cacheFrom...), build.WithCacheTo(f.cacheTo...)}
	if f.prioritizedFile != "" {
		files, err := build.ReadPrioritizedFiles(f.prioritizedFile)
		if err != nil {
			return nil, nil, nil, exitcode.Wrap(exitcode.Usage, err)
		}
		opts = append(opts, build.WithPrioritizedFiles(files))
	}
	if f.initPath != "" {
		opts = append(opts, build.WithInit(f.initPath))
	}
	if f.ociLayout != "" {
		opts = append(opts, build.WithOCILayout(f.ociLayout))
	}
	if f.tag != "" {
		opts = append(opts, build.WithTag(f.tag))
	}
	if f.repo != "" {
		opts = append(opts, build.WithName(f.repo))
	}
	c, err := f.builders.dial(ctx, build.Addr(f.addr), f.timeout)
	if err != nil {
		return nil, nil, nil, err
	}
	bopts, closeBuilders, err := f.builders.buildOptions(ctx, f.timeout)
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	return c, append(bopts, opts...), closeBuilders, nil
}

// solveShown runs build.Solve with its progress rendered on w in mode
// (progressui's), and returns once the display has shown everything.
func solveShown(ctx context.Context, w io.Writer, mode string, c *client.Client, l *lock.Lock, opts []build.Option) (*build.Result, error) {
	if mode == string(progressui.QuietMode) {
		return build.Solve(ctx, c, l, opts...)
	}
	d, err := progressui.NewDisplay(w, progressui.DisplayMode(mode))
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--progress %q: %w", mode, err))
	}
	// The display drains ch until Solve closes it, cancelled or not: on
	// the command's context it would stop at Ctrl-C and leave BuildKit's
	// status stream blocked on its send (buildctl does the same).
	ch := make(chan *client.SolveStatus)
	shown := make(chan struct{})
	go func() { _, _ = d.UpdateFrom(context.WithoutCancel(ctx), ch); close(shown) }()
	res, err := build.Solve(ctx, c, l, append(opts, build.WithStatus(ch))...)
	<-shown
	return res, err
}

// signBuilt signs the pushed digest and attaches the build attestations,
// recording the version of the buildkitd that built it.
func signBuilt(cmd *cobra.Command, c *client.Client, res *build.Result, l *lock.Lock, b sign.Builder, opts []sign.Option) error {
	ref, err := parseDigest(res.Ref)
	if err != nil {
		return err
	}
	if info, err := c.Info(cmd.Context()); err == nil && info != nil {
		b.BuildKitVersion = info.BuildkitVersion.Version
	}
	if err := sign.SignAndAttest(cmd.Context(), ref, l, b, opts...); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "signed %s with the lock, SBOM and provenance attestations (offline: no transparency log)\n", ref)
	return nil
}
