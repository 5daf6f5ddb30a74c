package cmd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"imagectl/internal/exitcode"
)

// outputFlag is the --output flag of read-only commands.
type outputFlag struct{ format string }

func addOutputFlag(cmd *cobra.Command, o *outputFlag) {
	cmd.Flags().StringVarP(&o.format, "output", "o", "human", "output format: human or json")
}

// json reports whether JSON output was asked for; an unknown format is a
// usage error.
func (o *outputFlag) json() (bool, error) {
	switch o.format {
	case "human", "":
		return false, nil
	case "json":
		return true, nil
	}
	return false, exitcode.Wrap(exitcode.Usage, fmt.Errorf("--output %q: want human or json", o.format))
}

// writeJSON writes v as indented JSON with a trailing newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
