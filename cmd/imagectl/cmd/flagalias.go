package cmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagAliases keeps old flag names working as hidden aliases of the one
// documented name: lock's --dir and release's --images-dir are --images,
// as in lint, pin, promote and releases. An alias never shows in help.
func flagAliases(cmd *cobra.Command, aliases map[string]string) {
	prev := cmd.Flags().GetNormalizeFunc()
	cmd.Flags().SetNormalizeFunc(func(f *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := aliases[name]; ok {
			name = to
		}
		return prev(f, name)
	})
}
