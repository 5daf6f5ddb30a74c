// Command imagectl locks, builds, signs, verifies and promotes PyTorch/CUDA
// images. See README.md.
package main

import (
	"context"
	"fmt"
	"os"

	"imagectl/cmd/imagectl/cmd"
	"imagectl/internal/exitcode"
	"imagectl/internal/interrupt"
)

func main() {
	ctx, stop := interrupt.Notify(context.Background(), exitNow, interrupt.Signals...)
	err := exitcode.FromContext(ctx, cmd.New().ExecuteContext(ctx))
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagectl:", err)
		os.Exit(exitcode.Code(err))
	}
}

// exitNow ends imagectl at a second SIGINT or SIGTERM, clean-ups or not.
func exitNow(s os.Signal) {
	fmt.Fprintln(os.Stderr, "imagectl:", &exitcode.Interrupt{Signal: s}, "again: exiting at once")
	os.Exit(exitcode.Interrupted)
}
