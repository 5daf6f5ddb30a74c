package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/discover"
	"imagectl/internal/exitcode"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
)

func newReleasesCmd() *cobra.Command {
	var (
		out       outputFlag
		tf        trustFlags
		imagesDir string
	)
	cmd := &cobra.Command{
		Use:   "releases REPOSITORY|NAME|RELEASE_FILE",
		Short: "List an image line's releases: tags, digests, months and what each signed lock says, newest first",
		Long: `Releases lists an image line's releases, newest first.

Given a REPOSITORY (registry/path, the platform's release repository) it reads
the registry alone, no git checkout: every tag and its digest, release tags
(IMAGE-YYYY.MM) apart from moving ones (IMAGE), the month, and, checked first
against the platform's public keys with pin's gates (signature, lock
attestation, passing verification), what the signed lock attestation says:
torch, CUDA, Python, NCCL, cuDNN, the driver floor and the platforms, and the
signed support window's end. A release that fails a gate is listed with the
reason. The keys are --key/--verifier-key, else cosign.pub and verifier.pub in
keys/, $IMAGECTL_KEYS_DIR or ~/.config/imagectl/keys (docs/users.md).

Given an image NAME or a release file it lists images/NAME/releases.json, the
platform team's git, as before: every tag with its digest and month, moving
tags marked.`,
		Example: `  imagectl releases registry.example/ml/pytorch-2.6-cu121-py3.11
  imagectl releases registry.example/ml/pytorch-2.6-cu121-py3.11 -o json
  imagectl releases pytorch-2.6-cu121-py3.11
  imagectl releases pytorch-2.6-cu121-py3.11 -o json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if repo, ok := repositoryArg(args[0]); ok {
				opts, err := tf.discoverOptions(cmd)
				if err != nil {
					return err
				}
				rs, err := discover.Releases(cmd.Context(), repo, opts...)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), struct {
						Repository string             `json:"repository"`
						Releases   []discover.Release `json:"releases"`
					}{repo.Name(), rs})
				}
				return writeReleases(cmd.OutOrStdout(), repo, rs)
			}
			f, err := releasefile.ReadFile(releaseFilePath(imagesDir, args[0]))
			if err != nil {
				return err
			}
			list := promote.List(f)
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					Image      string            `json:"image"`
					Repository string            `json:"repository"`
					Releases   []promote.Listing `json:"releases"`
				}{f.Image, f.Repository, list})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "TAG\tDIGEST\tMONTH\tMOVING\n")
			for _, l := range list {
				moving := ""
				if l.Moving {
					moving = "moving"
				}
				fmt.Fprintf(tw, "%s:%s\t%s\t%s\t%s\n", f.Repository, l.Tag, l.Digest, l.Month, moving)
			}
			return tw.Flush()
		},
	}
	addOutputFlag(cmd, &out)
	tf.add(cmd)
	cmd.Flags().StringVar(&imagesDir, "images", "images", "directory holding images/<name>/ (the NAME form)")
	return cmd
}

// repositoryArg reports whether arg names a repository (registry/path,
// not an existing file, not a .json path) rather than an image name or a
// release file.
func repositoryArg(arg string) (name.Repository, bool) {
	if !strings.Contains(arg, "/") || strings.HasSuffix(arg, ".json") {
		return name.Repository{}, false
	}
	if _, err := os.Stat(arg); err == nil {
		return name.Repository{}, false
	}
	repo, err := name.NewRepository(arg, name.StrictValidation)
	if err != nil {
		return name.Repository{}, false
	}
	return repo, true
}

// writeReleases is the releases table: one row per digest.
func writeReleases(w io.Writer, repo name.Repository, rs []discover.Release) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TAG\tMONTH\tDIGEST\tTORCH\tCUDA\tPYTHON\tNCCL\tCUDNN\tDRIVER\tPLATFORMS\tSUPPORT-END\tVERIFIED\n")
	for _, r := range rs {
		tags := append(append([]string(nil), r.Tags...), r.Moving...)
		l := r.Lock
		if l == nil {
			l = &promote.LockSummary{}
		}
		end := "-"
		if r.Support != nil {
			end = r.Support.End
		}
		verified := "yes"
		if !r.Verified {
			verified = "NO: " + strings.Join(r.Refusals, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strings.Join(tags, ","), dash(r.Month), r.Digest,
			dash(l.Torch), dash(l.CUDA), dash(l.Python), dash(l.NCCL), dash(l.CUDNN), dash(l.DriverFloor),
			dash(strings.Join(r.Platforms, ",")), end, verified)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "pin with: imagectl pin %s:TAG\n", repo.Name())
	return err
}

// usageErr is a usage error (exit 2).
func usageErr(format string, args ...any) error {
	return exitcode.Wrap(exitcode.Usage, fmt.Errorf(format, args...))
}
