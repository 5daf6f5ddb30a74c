package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"imagectl/internal/wheelhouse"
)

// standins writes the stand-ins of specs/pytorch.hcl's sources under DIR
// (wheelhouse.WriteStandins; cached: the big wheel is made once for a size).
func standins(args []string) error {
	fs := flag.NewFlagSet("standins", flag.ContinueOnError)
	bigBytes := fs.Int64("big-bytes", 300<<20, "payload of the big stand-in")
	big := fs.String("big", wheelhouse.BigLib, "which stand-in gets the big payload ("+wheelhouse.BigLib+" or torch)")
	var copies multi
	fs.Var(&copies, "copy", "a wheel file (glob) to add to the PyPI stand-in, e.g. Debian's pip (repeatable)")
	dir, err := parse(fs, args)
	if err != nil {
		return err
	}
	var extra []string
	for _, g := range copies {
		m, err := filepath.Glob(g)
		if err != nil || len(m) == 0 {
			return fmt.Errorf("standins: --copy %s matches no file", g)
		}
		extra = append(extra, m...)
	}
	if err := wheelhouse.WriteStandins(dir, *big, *bigBytes, extra); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wheelindex: stand-ins in %s (%s %d bytes)\n", dir, *big, *bigBytes)
	return nil
}
