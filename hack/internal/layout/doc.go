// Package layout holds the check that keeps the layout table of
// docs/development.md true: every package under internal/ has its row, and
// every path the table names exists.
package layout
