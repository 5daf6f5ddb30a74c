package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "verify".
func newVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "verify",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("verify is not built yet") },
	}
}
