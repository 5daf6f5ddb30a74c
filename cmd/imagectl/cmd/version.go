package cmd

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what version reports: imagectl's version, the commit it
// was built from (when the build recorded it), the Go toolchain, and the
// engines it links.
type versionInfo struct {
	Version string            `json:"version"`
	Commit  string            `json:"commit,omitempty"`
	Go      string            `json:"go"`
	Engines map[string]string `json:"engines"`
}

// engines are the modules version names.
var engines = []string{"github.com/moby/buildkit", "github.com/google/go-containerregistry", "github.com/sigstore/cosign/v2", "github.com/hashicorp/hcl/v2"}

func newVersionCmd() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print imagectl's version and the versions of the engines it links",
		Example: `  imagectl version
  imagectl version -o json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				return fmt.Errorf("no build information in this binary")
			}
			v := versionInfo{Version: bi.Main.Version, Go: bi.GoVersion, Engines: map[string]string{}}
			for _, st := range bi.Settings {
				if st.Key == "vcs.revision" {
					v.Commit = st.Value
				}
			}
			for _, d := range bi.Deps {
				for _, e := range engines {
					if d.Path == e {
						v.Engines[d.Path] = d.Version
					}
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			if v.Commit != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "imagectl %s (commit %s, %s)\n", v.Version, v.Commit, v.Go)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "imagectl %s (%s)\n", v.Version, v.Go)
			}
			for _, e := range engines {
				if ver, ok := v.Engines[e]; ok {
					fmt.Fprintf(cmd.OutOrStdout(), "  %s %s\n", e, ver)
				}
			}
			return nil
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}
