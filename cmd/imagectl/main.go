// Command imagectl locks, builds, signs, verifies and promotes PyTorch/CUDA
// images. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"imagectl/cmd/imagectl/cmd"
	"imagectl/internal/exitcode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cmd.New().ExecuteContext(ctx)
	interrupted := ctx.Err() != nil // read before stop, which cancels ctx
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagectl:", err)
		if interrupted {
			os.Exit(exitcode.Interrupted)
		}
		os.Exit(exitcode.Code(err))
	}
}
