package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"imagectl/internal/promote"
)

func newReleasesCmd() *cobra.Command {
	var (
		out       outputFlag
		imagesDir string
	)
	cmd := &cobra.Command{
		Use:   "releases NAME|RELEASE_FILE",
		Short: "List an image's releases: tags, digests and months, newest first",
		Long: `Releases lists the release file images/NAME/releases.json: every tag with its
digest and release month, newest first, moving tags marked. It reads git, not
the registry; imagectl promote makes the registry match.`,
		Example: `  imagectl releases pytorch-2.6-cu121-py3.11
  imagectl releases pytorch-2.6-cu121-py3.11 -o json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			f, err := promote.ReadFile(releaseFilePath(imagesDir, args[0]))
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
	cmd.Flags().StringVar(&imagesDir, "images", "images", "directory holding images/<name>/")
	return cmd
}
