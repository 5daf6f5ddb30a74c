package cmd

import (
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"imagectl/internal/build"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/spec"
)

// lockFlags are the flags of lock and its subcommands check and upgrade.
type lockFlags struct {
	spec     specFlags
	out      outputFlag
	images   []string
	dir      string
	addr     string
	cache    string
	proxy    string
	packages []string
	builders builderFlags
}

// addSelection adds the flags that pick the images and their locks.
func (f *lockFlags) addSelection(cmd *cobra.Command) {
	f.spec.add(cmd)
	addOutputFlag(cmd, &f.out)
	cmd.Flags().StringArrayVar(&f.images, "image", nil, "lock only this image (repeatable); the default is every image in the specs")
	cmd.Flags().StringVar(&f.dir, "images", "images", "directory holding images/<name>/ (lock.json)")
	flagAliases(cmd, map[string]string{"dir": "images"})
}

// addResolve adds the flags of the commands that resolve.
func (f *lockFlags) addResolve(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "", "buildkitd address (default $BUILDKIT_HOST, else "+build.DefaultAddr+")")
	fl.StringVar(&f.cache, "index-cache", "", "wheel metadata cache of the index proxy (default $XDG_CACHE_HOME/imagectl/pyindex)")
	fl.StringVar(&f.proxy, "index-proxy", "", "listen address of the index proxy pip resolves through (default 127.0.0.1:0; give one a remote buildkitd reaches: beyond loopback it requires a random token in its URL)")
	f.builders.add(cmd)
}

// resolve loads the images the flags and args select and the lock options
// that resolve them; the --builder flags are checked first.
func (f *lockFlags) resolve(cmd *cobra.Command, args []string) ([]spec.Image, []resolve.Option, error) {
	addr := build.Addr(f.addr) // build's and release's default
	bopts, err := f.builders.lockOptions(addr)
	if err != nil {
		return nil, nil, err
	}
	imgs, err := loadImages(cmd, f.spec, args, f.images)
	if err != nil {
		return nil, nil, err
	}
	if err := resolve.CheckPlatformBuilders(imgs, bopts...); err != nil {
		return nil, nil, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--builder: %w", err))
	}
	opts := append(lockOptions(cmd, addr, f.packages), bopts...)
	if f.cache != "" {
		opts = append(opts, resolve.WithIndexCache(f.cache))
	}
	if f.proxy != "" {
		opts = append(opts, resolve.WithIndexProxyAddr(f.proxy))
	}
	return imgs, opts, nil
}

const lockLong = `Lock resolves each concrete image to images/<name>/lock.json: the base tag to
its index and linux/amd64 manifest digests, the apt closure by apt inside the
base, the Python closure by pip inside the base (pip install --dry-run
--report), every .deb and wheel with URL, sha256 and size. Resolution runs as
BuildKit solves on --addr; --builder PLATFORM=ADDRESS runs that platform's
steps on a buildkitd of its own (a native arm64 builder instead of emulation;
--tlscacert, --tlscert, --tlskey for tcp:// addresses). Re-locking unchanged
inputs is byte-identical.

imagectl lock check is offline (no network, no daemon): exit 3 when the spec
or the catalog changed since the lock was written, 6 when the lock was edited
by hand, 1 when the image now breaks a catalog rule.

imagectl lock upgrade re-resolves the periphery for the monthly refresh and
prints what moved.

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
index that refuses them fails with exit 77, naming it and the source tried.`

func newLockCmd() *cobra.Command {
	var (
		f       lockFlags
		check   bool
		upgrade bool
	)
	cmd := &cobra.Command{
		Use:   "lock [specs...]",
		Short: "Resolve specs to hash-pinned locks (images/<name>/lock.json); check, upgrade or diff them",
		Long:  lockLong,
		Example: `  imagectl lock                              # every image in specs/
  imagectl lock specs/demo.hcl --image demo
  imagectl lock --image demo --builder linux/arm64=tcp://arm-builder:1234 \
    --tlscacert ca.pem --tlscert cert.pem --tlskey key.pem --index-proxy 10.0.0.5:8444
  imagectl lock check                        # exit 3 stale, 6 tampered
  imagectl lock upgrade --image demo
  imagectl lock diff old/lock.json images/demo/lock.json`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case check && (upgrade || len(f.packages) > 0):
				return exitcode.Wrap(exitcode.Usage, errors.New("--check and --upgrade exclude each other; --package needs --upgrade"))
			case check:
				return runLockCheck(cmd, args, &f)
			case upgrade:
				return runLockUpgrade(cmd, args, &f)
			case len(f.packages) > 0:
				return exitcode.Wrap(exitcode.Usage, errors.New("--package is a flag of imagectl lock upgrade"))
			}
			imgs, opts, err := f.resolve(cmd, args)
			if err != nil {
				return err
			}
			return resolve.LockAll(cmd.Context(), f.dir, imgs, opts...)
		},
	}
	f.addSelection(cmd)
	f.addResolve(cmd)
	fl := cmd.Flags()
	// The spellings of an earlier release: lock check, lock upgrade.
	fl.BoolVar(&check, "check", false, "check the locks offline: exit 3 stale, 6 tampered")
	fl.BoolVar(&upgrade, "upgrade", false, "re-resolve the periphery, keep the frozen core, print what moved")
	fl.StringArrayVar(&f.packages, "package", nil, "with --upgrade: move only this package (repeatable)")
	deprecateFlags(cmd, map[string]string{"check": "imagectl lock check", "upgrade": "imagectl lock upgrade", "package": "imagectl lock upgrade --package"})
	cmd.AddCommand(newLockCheckCmd(), newLockUpgradeCmd(), offline(newLockDiffCmd()))
	return cmd
}

func newLockCheckCmd() *cobra.Command {
	var f lockFlags
	cmd := &cobra.Command{
		Use:   "check [specs...]",
		Short: "Check the locks against the specs and the catalog, offline",
		Long: `Check reads each selected image's lock and compares it with the spec and
the catalog, offline (no network, no daemon): exit 3 when the spec or the
catalog changed since the lock was written (re-run imagectl lock), 6 when the
lock was edited by hand, 1 when the image now breaks a catalog rule. -o json
prints one record per lock.`,
		Example: `  imagectl lock check                        # every image in specs/
  imagectl lock check specs/demo.hcl --image demo -o json`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return runLockCheck(cmd, args, &f) },
	}
	f.addSelection(cmd)
	return cmd
}

func runLockCheck(cmd *cobra.Command, args []string, f *lockFlags) error {
	asJSON, err := f.out.json()
	if err != nil {
		return err
	}
	imgs, err := loadImages(cmd, f.spec, args, f.images)
	if err != nil {
		return err
	}
	res, err := resolve.CheckAll(cmd.Context(), f.dir, imgs)
	if asJSON {
		if werr := writeJSON(cmd.OutOrStdout(), res); werr != nil {
			return werr
		}
		return err
	}
	for _, r := range res {
		if r.Error == "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: current\n", r.Path)
		}
	}
	return err
}

func newLockUpgradeCmd() *cobra.Command {
	var f lockFlags
	cmd := &cobra.Command{
		Use:   "upgrade [specs...]",
		Short: "Re-resolve the periphery of the locks for the monthly refresh and print what moved",
		Long: `Upgrade re-resolves each selected image's lock for the monthly refresh and
prints what moved (-o json: the changes per image). The frozen core (torch,
CUDA, the Python minor, the spec's frozen list) keeps its locked versions, and
a package that would need it to move fails with pip's explanation. --package
limits the upgrade to the named packages. It resolves like imagectl lock:
BuildKit on --addr, the index proxy, the same credentials.`,
		Example: `  imagectl lock upgrade --image demo
  imagectl lock upgrade --package demo-util -o json`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return runLockUpgrade(cmd, args, &f) },
	}
	f.addSelection(cmd)
	f.addResolve(cmd)
	cmd.Flags().StringArrayVar(&f.packages, "package", nil, "move only this package (repeatable)")
	return cmd
}

func runLockUpgrade(cmd *cobra.Command, args []string, f *lockFlags) error {
	asJSON, err := f.out.json()
	if err != nil {
		return err
	}
	imgs, opts, err := f.resolve(cmd, args)
	if err != nil {
		return err
	}
	changes, err := resolve.UpgradeAll(cmd.Context(), f.dir, imgs, opts...)
	if werr := printChanges(cmd, changes, asJSON); werr != nil && err == nil {
		err = werr
	}
	return err
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

func lockOptions(cmd *cobra.Command, addr string, packages []string) []resolve.Option {
	return []resolve.Option{resolve.WithBuildkit(addr), resolve.WithPackages(packages...), resolve.WithAccess(accessOf(cmd))}
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
