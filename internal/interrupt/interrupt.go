// Package interrupt turns SIGINT (Ctrl-C) and SIGTERM (a cancelled CI job,
// docker stop) into the cancellation of a command's context, and a second
// one into an immediate exit.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"imagectl/internal/exitcode"
)

// Signals are the signals that interrupt an imagectl command.
var Signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM}

// Notify returns a copy of parent that is cancelled at the first of sigs to
// arrive, with an *exitcode.Interrupt naming it as the context's cause
// (context.Cause): the command then cancels its work and runs its
// clean-ups. At the second signal Notify calls exit with it at once,
// whatever is still running (imagectl passes a function that calls
// os.Exit(exitcode.Interrupted)).
//
// Notify calls exit itself instead of restoring the signals' default
// handling after the first: a process started with SIGINT ignored (a
// background job of a non-interactive shell, as CI runners start them)
// would go back to ignoring it, and the second Ctrl-C would be lost.
//
// stop cancels the context, stops the relaying of sigs and restores their
// handling as it was; call it when the command has returned.
func Notify(parent context.Context, exit func(os.Signal), sigs ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(&exitcode.Interrupt{Signal: s})
		case <-done:
			return
		}
		select {
		case s := <-ch:
			exit(s)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		select {
		case <-done:
		default:
			close(done)
		}
		cancel(context.Canceled)
	}
}
