package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "pin".
func newPinCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "pin",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("pin is not built yet") },
	}
}
