package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/bump"
	"imagectl/internal/discover"
	"imagectl/internal/exitcode"
)

func newBumpCmd() *cobra.Command {
	var (
		out    outputFlag
		tf     trustFlags
		repos  []string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "bump PATH...",
		Short: "Move the digest pins of the platform's images in your files to the newest verified release",
		Long: `Bump finds the digest pins (repository[:tag]@sha256:...) of the platform's
release repositories (--repo, a repository or a prefix ending in /) in PATHs
(files, or folders walked): Dockerfiles (FROM, ARG, COPY --from), Kubernetes
and compose YAML (image:), GitHub Actions workflows (container:, image:,
uses: docker://...) and plain-text files (*.txt, *.env, *.pins, *.hcl, *.tf).
Each moves to the newest release of its line (its repository) that passes
pin's gates under the platform's public keys and is in support. Only the
reference's bytes change: comments, quoting and layout stay as they were. A
release tag written in the pin (IMAGE-2026.11@sha256:...) becomes the new
release's tag; a moving tag stays.

Per change it prints the file and line, the tag, the old and new digest and
what changed (imagectl diff OLD NEW says more). --dry-run writes nothing.

Exit codes a CI job acts on: 0 nothing to do; 10 pins moved (with --dry-run:
would move): commit them or open a pull request; 5 a pin cannot be bumped
(no release of its line passes the gates, or the newest is out of support),
each named with the reason. The keys are --key/--verifier-key, else
cosign.pub and verifier.pub in keys/, $IMAGECTL_KEYS_DIR or
~/.config/imagectl/keys.`,
		Example: `  imagectl bump . --repo registry.example/ml/
  imagectl bump Dockerfile k8s/ compose.yaml .github/workflows/ --repo registry.example/ml/pytorch-2.6-cu121-py3.11 --dry-run
  imagectl bump . --repo registry.example/ml/ -o json`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if len(repos) == 0 {
				return usageErr("bump: name the platform's release repositories with --repo")
			}
			opts, err := tf.discoverOptions(cmd)
			if err != nil {
				return err
			}
			res, err := discover.NewResolver(opts...)
			if err != nil {
				return err
			}
			r, err := bump.Run(cmd.Context(), args, res, bump.WithRepositories(repos...), bump.WithDryRun(dryRun))
			if err != nil {
				return err
			}
			summaries := bumpSummaries(cmd.Context(), r, opts)
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), struct {
					*bump.Result
					Diffs map[string]string `json:"diffs"`
				}{r, summaries})
			} else {
				err = writeBump(cmd.OutOrStdout(), r, summaries)
			}
			if err != nil {
				return err
			}
			return bumpExit(r)
		},
	}
	addOutputFlag(cmd, &out)
	tf.add(cmd)
	cmd.Flags().StringSliceVar(&repos, "repo", nil, "the platform's release repository, or a prefix of them ending in / (repeatable; required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report the changes, write nothing")
	return cmd
}

// bumpExit is the exit a CI job acts on: 5 for a pin that cannot be
// bumped, 10 for pins moved, 0 for nothing to do.
func bumpExit(r *bump.Result) error {
	switch {
	case len(r.Stuck) > 0:
		return exitcode.Wrap(exitcode.PromotionRefused, fmt.Errorf("%d pin(s) cannot be bumped (see above)", len(r.Stuck)))
	case len(r.Changes) > 0:
		verb := "moved"
		if r.DryRun {
			verb = "to move (dry run)"
		}
		return exitcode.Wrap(exitcode.PinsMoved, fmt.Errorf("%d pin(s) in %d file(s) %s", len(r.Changes), len(r.Files), verb))
	}
	return nil
}

// bumpSummaries is a one-line diff (discover.Diff.Summary) per old and
// new digest of the changes, keyed "OLD NEW"; a diff that cannot be made
// (an old pin without signed attestations) says why.
func bumpSummaries(ctx context.Context, r *bump.Result, opts []discover.Option) map[string]string {
	out := map[string]string{}
	for _, c := range r.Changes {
		oldRef := c.Repository + "@" + c.Digest
		k := oldRef + " " + c.Repository + "@" + c.NewDigest
		if _, ok := out[k]; ok {
			continue
		}
		old, err1 := name.NewDigest(oldRef)
		new, err2 := name.NewDigest(c.Repository + "@" + c.NewDigest)
		if err := errors.Join(err1, err2); err != nil {
			out[k] = "no diff: " + err.Error()
			continue
		}
		d, err := discover.Compare(ctx, old, new, opts...)
		if err != nil {
			out[k] = "no diff: " + err.Error()
			continue
		}
		out[k] = d.Summary()
	}
	return out
}

func writeBump(w io.Writer, r *bump.Result, summaries map[string]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Changes) > 0 {
		fmt.Fprintf(tw, "FILE:LINE\tREPOSITORY\tTAG\tOLD\tNEW\n")
		for _, c := range r.Changes {
			fmt.Fprintf(tw, "%s:%d\t%s\t%s\t%s\t%s\n", c.File, c.Line, c.Repository, c.NewTag, short(c.Digest), short(c.NewDigest))
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(tw, "skipped (not parsed): %s\n", s)
	}
	for _, s := range r.Stuck {
		fmt.Fprintf(tw, "%s:%d\t%s\tcannot bump: %s\n", s.File, s.Line, s.Repository, s.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Changes) == 0 && len(r.Stuck) == 0 {
		_, err := fmt.Fprintf(w, "nothing to do: %d pin(s) at the newest verified release\n", len(r.Current))
		return err
	}
	if len(r.Changes) > 0 {
		seen := map[string]bool{}
		for _, c := range r.Changes {
			k := c.Repository + "@" + c.Digest
			if seen[k] {
				continue
			}
			seen[k] = true
			fmt.Fprintf(w, "%s -> %s: %s\n  imagectl diff %s %s\n", short(c.Digest), c.NewTag, summaries[k+" "+c.Repository+"@"+c.NewDigest],
				k, c.NewRef)
		}
	}
	return nil
}
