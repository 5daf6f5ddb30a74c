package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"imagectl/internal/discover"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
)

// trustFlags are the public keys promote and pin trust.
type trustFlags struct {
	keys             []string
	verifierKeys     []string
	requireContainer bool
	skipPlatforms    []string
}

func (f *trustFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.keys, "key", nil, "trusted signing public key(s): signatures and lock attestations (default: cosign.pub of keys/, $IMAGECTL_KEYS_DIR or ~/.config/imagectl/keys)")
	cmd.Flags().StringSliceVar(&f.verifierKeys, "verifier-key", nil, "trusted verifier public key(s): verification attestations (default: verifier.pub beside the default cosign.pub)")
	cmd.Flags().BoolVar(&f.requireContainer, "require-container-runtime", false, "accept only verifications run in a container started from the digest (containerd, podman, docker, a Kubernetes Job), never in-place")
	cmd.Flags().StringSliceVar(&f.skipPlatforms, "skip-platform", nil, "an image index: a platform (linux/arm64) whose image may go unverified; every other platform must pass verification (repeatable)")
}

// resolve fills the keys not given with the default public keys
// (discover.DefaultKeys): keys/ in the working directory, then
// $IMAGECTL_KEYS_DIR, then ~/.config/imagectl/keys.
func (f *trustFlags) resolve() error {
	if len(f.keys) > 0 && len(f.verifierKeys) > 0 {
		return nil
	}
	k, err := discover.DefaultKeys()
	if err != nil {
		return err
	}
	if len(f.keys) == 0 {
		f.keys = []string{k.Signing}
	}
	if len(f.verifierKeys) == 0 {
		f.verifierKeys = []string{k.Verifier}
	}
	return nil
}

func (f *trustFlags) options(cmd *cobra.Command) ([]promote.Option, error) {
	if err := f.resolve(); err != nil {
		return nil, err
	}
	return []promote.Option{promote.WithTrustedKeys(f.keys...), promote.WithVerifierKeys(f.verifierKeys...),
		promote.WithRequireContainerRuntime(f.requireContainer), promote.WithSkipPlatforms(f.skipPlatforms...), promote.WithAccess(accessOf(cmd))}, nil
}

// discoverOptions are the same keys and access for the users' commands.
func (f *trustFlags) discoverOptions(cmd *cobra.Command) ([]discover.Option, error) {
	if err := f.resolve(); err != nil {
		return nil, err
	}
	return []discover.Option{discover.WithKeys(f.keys, f.verifierKeys), discover.WithAccess(accessOf(cmd)),
		discover.WithSkipPlatforms(f.skipPlatforms...)}, nil
}

// releaseFilePath maps NAME to images/NAME/releases.json; a path is kept.
func releaseFilePath(imagesDir, arg string) string {
	if strings.HasSuffix(arg, ".json") || strings.ContainsRune(arg, filepath.Separator) {
		return arg
	}
	return filepath.Join(imagesDir, arg, releasefile.FileName)
}

func newPromoteCmd() *cobra.Command {
	var (
		tf        trustFlags
		out       outputFlag
		confirm   bool
		imagesDir string
		lockPath  string
		specs     []string
		sf        specFlags
	)
	cmd := &cobra.Command{
		Use:   "promote NAME|RELEASE_FILE|IMAGES_DIR",
		Short: "Reconcile the release repository to images/NAME/releases.json (dry run unless --confirm)",
		Long: `Promote reads the release file (images/NAME/releases.json: digests and their
release tags, plus moving tags) and reconciles the release repository to it.

Every release that needs anything must pass every gate, or nothing at all is
copied (exit 5, each refusal naming its gate):
  digest        the source is IMAGE@sha256:..., never a tag
  signature     signed, for exactly this digest, by a --key (of an image
                index: the index and every platform's image)
  attestations  every attestation a release writes, by a --key: the SPDX and
                CycloneDX SBOMs and the provenance (of an index: its own
                provenance, and all of them on every platform's image)
  verification  a verification attestation for exactly this digest, passing,
                against the release's lock, signed by a --verifier-key
  lock          the lock attestation is the release's own lock: lock.json
                for a release built from it, else the lock its lock_digest
                in the release file records (last month is gated against
                last month's lock)
  immutable-tag a release tag never moves to another digest
  vulnerabilities  with --spec, for an image whose spec has policy { vulnerabilities
                { ... } }: its latest vuln attestation (imagectl scan --attest),
                signed by a --key, breaks no rule (docs/security.md)

Then images are copied by digest (blobs mounted across repositories, not
uploaded again), their .sig and .att tags along, and tags are set last, so
no tag ever points at a partly copied image. Tags not in the file stay.
Without --confirm nothing is written: the plan is printed. A second run does
nothing; an interrupted run completes when run again. Given a directory,
promote reconciles every <dir>/*/releases.json, each gated on its own.
--output json prints a list of results (one per release file).`,
		Example: `  imagectl promote pytorch-2.6-cu121-py3.11   # dry run: gates and plan
  imagectl promote pytorch-2.6-cu121-py3.11 --confirm
  imagectl promote images/ --confirm --key signing.pub --verifier-key verifier.pub
  imagectl promote images/pytorch-2.6-cu121-py3.11/releases.json --key keys/cosign.pub --verifier-key keys/verifier.pub -o json
  imagectl promote images/ --confirm --spec specs/   # with the vulnerabilities gate of each spec`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			opts, err := tf.options(cmd)
			if err != nil {
				return err
			}
			opts = append(opts, promote.WithConfirm(confirm))
			if len(specs) > 0 {
				imgs, err := loadImages(cmd, sf, specs, nil)
				if err != nil {
					return err
				}
				opts = append(opts, promote.WithVulnerabilityPolicies(imgs...))
			}
			if lockPath != "" {
				opts = append(opts, promote.WithLockFile(lockPath))
			}
			var results []*promote.Result
			if st, serr := os.Stat(args[0]); serr == nil && st.IsDir() {
				results, err = promote.RunAll(cmd.Context(), args[0], opts...)
			} else {
				var res *promote.Result
				res, err = promote.Run(cmd.Context(), releaseFilePath(imagesDir, args[0]), opts...)
				if res != nil {
					results = append(results, res)
				}
			}
			if asJSON {
				if results == nil {
					results = []*promote.Result{}
				}
				if werr := writeJSON(cmd.OutOrStdout(), results); werr != nil {
					return werr
				}
			} else {
				for _, res := range results {
					printPlan(cmd, res)
				}
			}
			var re *promote.RefusedError
			if err != nil && !errors.As(err, &re) && len(results) > 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "not finished: run the same command again to complete; no tag points at a partial image")
			}
			return err
		},
	}
	tf.add(cmd)
	addOutputFlag(cmd, &out)
	cmd.Flags().BoolVar(&confirm, "confirm", false, "act; without it, a dry run")
	cmd.Flags().StringVar(&imagesDir, "images", "images", "directory holding images/<name>/")
	cmd.Flags().StringVar(&lockPath, "lock", "", "the lock in git the lock gate compares with (default: lock.json beside the release file)")
	cmd.Flags().StringSliceVar(&specs, "spec", nil, "spec file(s) or directory whose policy { vulnerabilities { ... } } blocks gate the images (the vulnerabilities gate)")
	sf.add(cmd)
	return cmd
}

func printPlan(cmd *cobra.Command, res *promote.Result) {
	w := cmd.ErrOrStderr()
	for _, s := range res.InSync {
		fmt.Fprintf(w, "in sync   %s\n", s)
	}
	for _, s := range res.Gated {
		fmt.Fprintf(w, "gated     %s\n", s)
	}
	for _, a := range res.Actions {
		state := "planned"
		if a.Done {
			state = "done   "
		}
		from := ""
		if a.From != "" {
			from = " (was " + short(a.From) + ")"
		}
		fmt.Fprintf(w, "%s %-15s %s -> %s%s\n", state, a.Kind, a.Target, short(a.Digest), from)
	}
	switch {
	case len(res.Actions) == 0:
		fmt.Fprintf(w, "%s: release repository %s is in sync\n", res.Image, res.Repository)
	case res.DryRun:
		fmt.Fprintf(w, "dry run: %d action(s); run again with --confirm to act\n", len(res.Actions))
	}
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
