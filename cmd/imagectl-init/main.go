// Command imagectl-init is the image's entrypoint (PID 1): it prepares the
// container (storage, swappiness, /dev/shm, caches, driver floor,
// fingerprint) as the baked runtime config says, then runs the user's command,
// forwarding signals, reaping zombies and exiting with the command's code.
//
//	imagectl-init [--] COMMAND [ARG...]
//	imagectl-init doctor [--output json]
//
// See docs/init.md.
package main

import (
	"context"
	"fmt"
	"os"

	"imagectl/internal/exitcode"
	"imagectl/internal/logs"
	"imagectl/internal/runtime"
)

func main() {
	proc, err := runtime.Listen()
	ctx := logs.With(context.Background(), newLogger(os.Stderr, os.Getenv(runtime.EnvDebug) != ""))
	if err != nil {
		logs.From(ctx).Warn(err.Error() + "; orphaned processes will not be reaped by the init")
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "imagectl-init: no command given; usage: imagectl-init [--] COMMAND [ARG...] | imagectl-init doctor")
		os.Exit(exitcode.Usage)
	}
	cfg, err := runtime.LoadConfig(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagectl-init:", err)
		os.Exit(exitcode.Usage)
	}
	code, err := proc.Run(ctx, args, os.Environ(), cfg.GracePeriod.Std())
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagectl-init:", err)
	}
	os.Exit(code)
}
