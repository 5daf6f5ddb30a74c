package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/mirror"
)

func newMirrorCmd() *cobra.Command {
	var (
		sf       specFlags
		out      outputFlag
		images   []string
		artifact []string
	)
	cmd := &cobra.Command{
		Use:   "mirror [specs...]",
		Short: "Copy each image's upstream base, by digest and with every platform, into repos.mirror",
		Long: `Mirror copies the base of every selected image into the platform's own
registry, under the spec's repos.mirror plus the base's repository path
(nvidia/cuda:12.1.1-runtime-ubuntu22.04 -> <mirror>/nvidia/cuda): the whole
index by digest, every platform included, then the tag. Blobs and manifests
the mirror already holds are not uploaded again, so a rerun writes nothing.

Lock then resolves the base in the mirror and builds pull it from there: a
pinned lock keeps building after the upstream deleted the tag. Run mirror
before lock (and again when the upstream tag moved: the old digest stays).

Registry credentials come from the Docker config (~/.docker/config.json).
--output json prints one record per base: source, digest, target, tag,
platforms, whether it was present and what was uploaded.

imagectl mirror artifact SRC DST_REPO copies one image or OCI artifact (the
vulnerability database: imagectl scan push-db) by digest instead.

Exit codes: 1 a spec without repos.mirror, an upstream without the base, or
another error; 69 a registry that cannot be reached.`,
		Example: `  imagectl mirror specs/pytorch.hcl --var base_registry=registry.example/upstream
  imagectl mirror specs/ --image pytorch-2.6-cu121-py3.11 -o json
  imagectl mirror artifact upstream.example/anchore/grype-db:latest reg/platform/grype-db`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if len(artifact) > 0 { // the spelling of an earlier release
				if len(artifact) != 2 || len(args) > 0 {
					return exitcode.Wrap(exitcode.Usage, errors.New("--artifact takes SRC,DST_REPO and no specs"))
				}
				return runMirrorArtifact(cmd, artifact[0], artifact[1], asJSON)
			}
			imgs, err := loadImages(cmd, sf, args, images)
			if err != nil {
				return err
			}
			res, err := mirror.Run(cmd.Context(), imgs, mirror.WithAccess(accessOf(cmd)))
			return writeMirrorResults(cmd, res, err, asJSON)
		},
	}
	sf.add(cmd)
	addOutputFlag(cmd, &out)
	cmd.Flags().StringArrayVar(&images, "image", nil, "mirror only this image's base (repeatable); the default is every image in the specs")
	cmd.Flags().StringSliceVar(&artifact, "artifact", nil, "SRC,DST_REPO: copy one image or OCI artifact (the vulnerability database) by digest instead of the specs' bases")
	deprecateFlags(cmd, map[string]string{"artifact": "imagectl mirror artifact SRC DST_REPO"})
	cmd.AddCommand(newMirrorArtifactCmd())
	return cmd
}

func newMirrorArtifactCmd() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "artifact SRC DST_REPO",
		Short: "Copy one image or OCI artifact by digest into DST_REPO, then its tag",
		Long: `Artifact copies SRC (an image, an image index or an OCI artifact such as the
vulnerability database that imagectl scan push-db publishes) by digest into
DST_REPO, then SRC's tag; no spec is read. Blobs and manifests DST_REPO
already holds are not uploaded again. The target is printed on stdout; -o
json prints the record (source, digest, target, tag, what was uploaded).`,
		Example: `  imagectl mirror artifact upstream.example/anchore/grype-db:latest reg/platform/grype-db
  imagectl mirror artifact reg/platform/grype-db@sha256:... other-reg/platform/grype-db -o json`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			return runMirrorArtifact(cmd, args[0], args[1], asJSON)
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}

func runMirrorArtifact(cmd *cobra.Command, src, dstRepo string, asJSON bool) error {
	dst, err := name.NewRepository(dstRepo, accessOf(cmd).NameOptions(auth.RegistryOf(dstRepo))...)
	if err != nil {
		return exitcode.Wrap(exitcode.Usage, fmt.Errorf("destination %q: %w", dstRepo, err))
	}
	r, err := mirror.Copy(cmd.Context(), src, dst, mirror.WithAccess(accessOf(cmd)))
	if err != nil {
		return err
	}
	return writeMirrorResults(cmd, []mirror.Result{r}, nil, asJSON)
}

// writeMirrorResults prints res (the targets on stdout, what happened on
// stderr; or JSON) and returns err, the mirror's own failure, first.
func writeMirrorResults(cmd *cobra.Command, res []mirror.Result, err error, asJSON bool) error {
	if asJSON {
		if werr := writeJSON(cmd.OutOrStdout(), res); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	for _, r := range res {
		state := fmt.Sprintf("copied (%d blobs, %d bytes, %d manifests uploaded)", r.Uploaded.Blobs, r.Uploaded.Bytes, r.Uploaded.Manifests)
		if r.Present {
			state = "already mirrored"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s -> %s [%s]: %s; used by %s\n", r.Source, r.Target, strings.Join(r.Platforms, ", "), state, strings.Join(r.Images, ", "))
		fmt.Fprintln(cmd.OutOrStdout(), r.Target)
	}
	return err
}
