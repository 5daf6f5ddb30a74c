package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"imagectl/internal/exitcode"
	"imagectl/internal/runtime"
)

// doctor is `imagectl-init doctor`: the same report as `imagectl doctor`,
// from inside the image, where imagectl itself is not installed.
func doctor(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	output := fs.String("output", "human", "output format: human or json")
	fs.StringVar(output, "o", "human", "shorthand for --output")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: imagectl-init doctor [--output human|json]\n\nExplains, from the live environment, the usual failures: torch.cuda not\navailable, NCCL timeouts, a compile cache filling the disk, storage not mounted.")
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitcode.OK
		}
		return exitcode.Usage
	}
	if *output != "human" && *output != "json" {
		fmt.Fprintf(os.Stderr, "imagectl-init: --output %q: want human or json\n", *output)
		return exitcode.Usage
	}
	cfg, err := runtime.LoadConfig(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagectl-init:", err)
		return exitcode.Usage
	}
	r, err := runtime.Diagnose(ctx, cfg, os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagectl-init:", err)
		return exitcode.Failure
	}
	if err := render(os.Stdout, r, *output == "json"); err != nil {
		fmt.Fprintln(os.Stderr, "imagectl-init:", err)
		return exitcode.Failure
	}
	if r.Failed() {
		return exitcode.Failure
	}
	return exitcode.OK
}

func render(w io.Writer, r runtime.Report, asJSON bool) error {
	if !asJSON {
		return r.WriteText(w)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
