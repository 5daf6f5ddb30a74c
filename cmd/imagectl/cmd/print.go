package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "print".
func newPrintCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "print",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("print is not built yet") },
	}
}
