package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "fingerprint".
func newFingerprintCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "fingerprint",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("fingerprint is not built yet") },
	}
}
