package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "build".
func newBuildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "build",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("build is not built yet") },
	}
}
