package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "lint".
func newLintCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "lint",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("lint is not built yet") },
	}
}
