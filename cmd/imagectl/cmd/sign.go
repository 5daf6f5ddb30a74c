package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "sign".
func newSignCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "sign",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("sign is not built yet") },
	}
}
