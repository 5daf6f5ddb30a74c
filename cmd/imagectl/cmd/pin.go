package cmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/discover"
	"imagectl/internal/exitcode"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
)

func newPinCmd() *cobra.Command {
	var (
		tf            trustFlags
		out           outputFlag
		imagesDir     string
		acceptExpired bool
	)
	cmd := &cobra.Command{
		Use:   "pin NAME:TAG",
		Short: "Resolve a release tag to repo@sha256:... after verifying its signature and attestations",
		Long: `Pin resolves a release tag to its digest and prints repo@sha256:..., what to
paste into job specs: tags move, digests do not. Before printing it checks,
on that digest, what promotion checked: a signature by a trusted --key, a
valid lock attestation by a trusted --key, and a passing verification
attestation for exactly this digest and lock by a --verifier-key (exit 5
otherwise, naming the gate).

A multi-platform image's tag resolves to its OCI image index, and pin prints the
index digest (one reference for every node type). Each platform's image must
have its own passing verification, unless --skip-platform names the platform
(e.g. an amd64 cluster pinning an index whose arm64 image was not verified);
--output json lists each platform's image and whether it was verified or skipped.

NAME is an image name (its release repository is read from
images/NAME/releases.json) or a full repository (registry/path:TAG).
--output json adds the attested lock's summary.

The registry login is the Docker config's (docker login, credential helpers);
a private CA is added with --ca-file. A registry that refuses the login is exit
77, naming it and the Docker config entry tried.

A release with a support window (the spec's policy support_months, signed
when it was promoted) is pinned with a warning in its last month, and refused
once the window has ended (exit 5) unless --accept-expired. The keys are
--key/--verifier-key, else cosign.pub and verifier.pub in keys/,
$IMAGECTL_KEYS_DIR or ~/.config/imagectl/keys: a user needs no checkout of the
platform's files (docs/users.md).`,
		Example: `  imagectl pin pytorch-2.6-cu121-py3.11:pytorch-2.6-cu121-py3.11
  imagectl pin registry.example/ml/pytorch:pytorch-2.6-cu121-py3.11-2026.12 --key cosign.pub --verifier-key verifier.pub -o json
  imagectl pin pytorch-cu126-py3.11:pytorch-cu126-py3.11 --skip-platform linux/arm64 -o json
  DOCKER_CONFIG=~/.docker-platform imagectl pin registry.example/ml/pytorch:pytorch-2.6-cu121-py3.11 --ca-file platform-ca.pem`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			tag, err := pinTag(imagesDir, args[0])
			if err != nil {
				return err
			}
			opts, err := tf.options(cmd)
			if err != nil {
				return err
			}
			p, err := promote.Pin(cmd.Context(), tag, opts...)
			if err != nil {
				return err
			}
			dopts, err := tf.discoverOptions(cmd)
			if err != nil {
				return err
			}
			d, err := name.NewDigest(p.Ref)
			if err != nil {
				return err
			}
			s, err := discover.SupportOf(cmd.Context(), d, dopts...)
			if err != nil {
				return err
			}
			if s != nil {
				p.SupportEnd = s.End
				switch s.State(time.Now()) {
				case discover.Expired:
					if !acceptExpired {
						return &discover.ExpiredError{Ref: p.Ref, Support: *s}
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "imagectl: warning: %s is out of support since %s (--accept-expired)\n", p.Ref, s.End)
				case discover.Ending:
					fmt.Fprintf(cmd.ErrOrStderr(), "imagectl: warning: %s leaves support on %s: plan the move to a newer release (imagectl releases %s)\n", p.Ref, s.End, d.Context().Name())
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), p)
			}
			fmt.Fprintln(cmd.OutOrStdout(), p.Ref)
			return nil
		},
	}
	tf.add(cmd)
	addOutputFlag(cmd, &out)
	cmd.Flags().BoolVar(&acceptExpired, "accept-expired", false, "pin a release whose support window has ended (a warning instead of exit 5)")
	cmd.Flags().StringVar(&imagesDir, "images", "images", "directory holding images/<name>/")
	return cmd
}

// pinTag maps NAME:TAG to the release repository's tag.
func pinTag(imagesDir, arg string) (name.Tag, error) {
	if strings.Contains(arg, "@") {
		return name.Tag{}, exitcode.Wrap(exitcode.Usage, fmt.Errorf("%q: pin takes NAME:TAG; a digest is already pinned", arg))
	}
	i := strings.LastIndex(arg, ":")
	if i < 0 || strings.Contains(arg[i:], "/") {
		return name.Tag{}, exitcode.Wrap(exitcode.Usage, fmt.Errorf("%q: want NAME:TAG", arg))
	}
	repo, tag := arg[:i], arg[i+1:]
	if !strings.Contains(repo, "/") {
		f, err := releasefile.ReadFile(filepath.Join(imagesDir, repo, releasefile.FileName))
		if err != nil {
			return name.Tag{}, err
		}
		repo = f.Repository
	}
	t, err := name.NewTag(repo+":"+tag, name.StrictValidation)
	if err != nil {
		return name.Tag{}, exitcode.Wrap(exitcode.Usage, err)
	}
	return t, nil
}
