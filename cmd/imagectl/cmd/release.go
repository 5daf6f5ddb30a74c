package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "release".
func newReleaseCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "release",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("release is not built yet") },
	}
}
