// Package shell holds how imagectl writes a value into a POSIX shell
// script (build steps, the lock's probes, the verify Job's script): one
// home for the quoting rule. Standard library only.
package shell

import "strings"

// Quote returns s as one single-quoted POSIX shell word: any ' inside is
// closed, escaped and reopened ('\”), so the shell reads s literally.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
