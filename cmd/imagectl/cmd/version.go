package cmd

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print imagectl's version and the versions of the engines it links",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				return fmt.Errorf("no build information in this binary")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imagectl %s (%s)\n", bi.Main.Version, bi.GoVersion)
			for _, d := range bi.Deps {
				switch d.Path {
				case "github.com/moby/buildkit", "github.com/google/go-containerregistry", "github.com/sigstore/cosign/v2", "github.com/hashicorp/hcl/v2":
					fmt.Fprintf(cmd.OutOrStdout(), "  %s %s\n", d.Path, d.Version)
				}
			}
			return nil
		},
	}
}
