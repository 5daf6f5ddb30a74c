package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// STUB: replaced by the stage that owns "lock".
func newLockCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "lock",
		Short:  "(not built yet)",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("lock is not built yet") },
	}
}
