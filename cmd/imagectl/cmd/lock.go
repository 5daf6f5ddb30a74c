package cmd

import (
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"imagectl/internal/build"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/spec"
)

func newLockCmd() *cobra.Command {
	var (
		sf       specFlags
		out      outputFlag
		images   []string
		dir      string
		addr     string
		cache    string
		proxy    string
		check    bool
		upgrade  bool
		packages []string
		bf       builderFlags
	)
	cmd := &cobra.Command{
		Use:   "lock [specs...]",
		Short: "Resolve specs to hash-pinned locks (images/<name>/lock.json), check or upgrade them",
		Long: `Lock resolves each concrete image to images/<name>/lock.json: the base tag to
its index and linux/amd64 manifest digests, the apt closure by apt inside the
base, the Python closure by pip inside the base (pip install --dry-run
--report), every .deb and wheel with URL, sha256 and size. Resolution runs as
BuildKit solves on --addr; --builder PLATFORM=ADDRESS runs that platform's
steps on a buildkitd of its own (a native arm64 builder instead of emulation;
--tlscacert, --tlscert, --tlskey for tcp:// addresses). Re-locking unchanged
inputs is byte-identical.

--check is offline (no network, no daemon): exit 3 when the spec or the
catalog changed since the lock was written, 6 when the lock was edited by
hand, 1 when the image now breaks a catalog rule.

--upgrade re-resolves the periphery for the monthly refresh and prints what
moved; the frozen core (torch, CUDA, the Python minor, the spec's frozen
list) keeps its locked versions, and a package that would need it to move
fails with pip's explanation. --package limits the upgrade to the named
packages.

pip sees one index: a proxy imagectl serves on --index-proxy (loopback) while
it resolves (on an address beyond loopback it answers only URLs carrying a
random token it gives pip, so nobody else reaching the port can use it or
the credentials it sends upstream), which takes torch, triton and nvidia-* from the torch variant's
index only and every other project from the first pip_indexes entry that has
it, and serves wheel metadata from --index-cache (by sha256) so that a big
wheel on an index without metadata files is read at most once.

Index credentials come from --netrc (or an index URL's user:password@, which is
taken out of it): the proxy sends them upstream, pip gets them as a BuildKit
secret; the base's registry
credentials from the Docker config; a private CA from --ca-file. A registry or
index that refuses them fails with exit 77, naming it and the source tried.`,
		Example: `  imagectl lock                              # every image in specs/
  imagectl lock specs/demo.hcl --image demo
  imagectl lock --check                      # exit 3 stale, 6 tampered
  imagectl lock --image demo --builder linux/arm64=tcp://arm-builder:1234 \
    --tlscacert ca.pem --tlscert cert.pem --tlskey key.pem --index-proxy 10.0.0.5:8444
  imagectl lock --upgrade --image demo
  imagectl lock --upgrade --package demo-util -o json
  imagectl lock diff old/lock.json images/demo/lock.json`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if check && upgrade || len(packages) > 0 && !upgrade {
				return exitcode.Wrap(exitcode.Usage, errors.New("--check and --upgrade exclude each other; --package needs --upgrade"))
			}
			addr = build.Addr(addr) // build's and release's default
			bopts, err := bf.lockOptions(addr)
			if err != nil {
				return err
			}
			imgs, err := loadImages(cmd, sf, args, images)
			if err != nil {
				return err
			}
			if check {
				res, err := lock.CheckAll(cmd.Context(), dir, imgs)
				if asJSON {
					if werr := writeJSON(cmd.OutOrStdout(), res); werr != nil {
						return werr
					}
				} else {
					for _, r := range res {
						if r.Error == "" {
							fmt.Fprintf(cmd.ErrOrStderr(), "%s: current\n", r.Path)
						}
					}
				}
				return err
			}
			if err := lock.CheckPlatformBuilders(imgs, bopts...); err != nil {
				return exitcode.Wrap(exitcode.Usage, fmt.Errorf("--builder: %w", err))
			}
			opts := append(lockOptions(cmd, addr, packages), bopts...)
			if cache != "" {
				opts = append(opts, lock.WithIndexCache(cache))
			}
			if proxy != "" {
				opts = append(opts, lock.WithIndexProxyAddr(proxy))
			}
			if !upgrade {
				return lock.LockAll(cmd.Context(), dir, imgs, opts...)
			}
			changes, err := lock.UpgradeAll(cmd.Context(), dir, imgs, opts...)
			if werr := printChanges(cmd, changes, asJSON); werr != nil && err == nil {
				err = werr
			}
			return err
		},
	}
	sf.add(cmd)
	addOutputFlag(cmd, &out)
	f := cmd.Flags()
	f.StringArrayVar(&images, "image", nil, "lock only this image (repeatable); the default is every image in the specs")
	f.StringVar(&dir, "images", "images", "directory holding images/<name>/ (lock.json)")
	flagAliases(cmd, map[string]string{"dir": "images"})
	f.StringVar(&addr, "addr", "", "buildkitd address (default $BUILDKIT_HOST, else "+build.DefaultAddr+")")
	f.StringVar(&cache, "index-cache", "", "wheel metadata cache of the index proxy (default $XDG_CACHE_HOME/imagectl/pyindex)")
	f.StringVar(&proxy, "index-proxy", "", "listen address of the index proxy pip resolves through (default 127.0.0.1:0; give one a remote buildkitd reaches: beyond loopback it requires a random token in its URL)")
	f.BoolVar(&check, "check", false, "check the locks offline: exit 3 stale, 6 tampered")
	f.BoolVar(&upgrade, "upgrade", false, "re-resolve the periphery, keep the frozen core, print what moved")
	f.StringArrayVar(&packages, "package", nil, "with --upgrade: move only this package (repeatable)")
	bf.add(cmd)
	cmd.AddCommand(offline(newLockDiffCmd()))
	return cmd
}

func loadImages(cmd *cobra.Command, sf specFlags, args, names []string) ([]spec.Image, error) {
	sopts, err := sf.options()
	if err != nil {
		return nil, err
	}
	imgs, err := spec.Load(cmd.Context(), specPaths(args), sopts...)
	if err != nil {
		return nil, pathError(err) // as lint and print: a missing path is usage
	}
	sel, err := spec.Select(imgs, names)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	return sel, nil
}

func lockOptions(cmd *cobra.Command, addr string, packages []string) []lock.Option {
	return []lock.Option{lock.WithBuildkit(addr), lock.WithPackages(packages...), lock.WithAccess(accessOf(cmd))}
}

func printChanges(cmd *cobra.Command, changes map[string]lock.Changes, asJSON bool) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), changes)
	}
	names := make([]string, 0, len(changes))
	for n := range changes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(cmd.OutOrStdout(), "%s:\n", n)
		if err := changes[n].WriteText(cmd.OutOrStdout()); err != nil {
			return err
		}
	}
	return nil
}

func newLockDiffCmd() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show the packages added, removed and changed between two lock files",
		Long: `Diff compares two lock files by package (base, apt, pip): added, removed and
changed with versions, the monthly release notes. Both files are parsed
strictly: a tampered lock exits 6.`,
		Example: `  imagectl lock diff old.lock.json images/demo/lock.json
  git show HEAD~1:images/demo/lock.json > /tmp/old.json && imagectl lock diff /tmp/old.json images/demo/lock.json -o json`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			old, err := lock.Read(args[0])
			if err != nil {
				return err
			}
			new, err := lock.Read(args[1])
			if err != nil {
				return err
			}
			c := lock.Diff(old, new)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), c)
			}
			return c.WriteText(cmd.OutOrStdout())
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}
