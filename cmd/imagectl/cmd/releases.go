package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "releases".
func newReleasesCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "releases",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("releases is not built yet") },
	}
}
