package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "promote".
func newPromoteCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "promote",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("promote is not built yet") },
	}
}
