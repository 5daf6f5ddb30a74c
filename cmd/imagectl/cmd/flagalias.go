package cmd

import (
	"fmt"
	"sort"

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

// deprecateFlags keeps the flags of an earlier release's spelling working,
// hidden from help, and says on stderr what replaces one when it is used
// (instead[name]). Cobra's own deprecation notice would go to stdout, which
// is the machine output's. Call it after cmd.RunE is set.
func deprecateFlags(cmd *cobra.Command, instead map[string]string) {
	names := make([]string, 0, len(instead))
	for n := range instead {
		_ = cmd.Flags().MarkHidden(n)
		names = append(names, n)
	}
	sort.Strings(names)
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		for _, n := range names {
			if c.Flags().Changed(n) {
				fmt.Fprintf(c.ErrOrStderr(), "Flag --%s has been deprecated, use %s\n", n, instead[n])
			}
		}
		return run(c, args)
	}
}
