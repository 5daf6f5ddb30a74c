package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "compat".
func newCompatCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "compat",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("compat is not built yet") },
	}
}
