package runtime

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestContextWatchesOnlyWhenAsked: the preparation context starts its
// watcher only when a step asks for Done; without one, a SIGTERM that came
// during the preparation is still reported by stop (the init then exits
// 128+15 without starting the command); with one, the SIGTERM cancels the
// context with the signal as its cause. A Done asked for after stop starts
// nothing.
func TestContextWatchesOnlyWhenAsked(t *testing.T) {
	t.Run("no wait", func(t *testing.T) {
		p := &Process{forward: make(chan os.Signal, 4)}
		ctx, stop := p.Context(context.Background())
		p.forward <- syscall.SIGUSR1
		p.forward <- syscall.SIGTERM
		if w := ctx.(*signalContext).inner.Load(); w != nil {
			t.Fatal("a watcher runs though no step asked for Done")
		}
		if err := ctx.Err(); err != nil {
			t.Errorf("Err() = %v before anyone watched, want nil", err)
		}
		if sig, ok := stop(); !ok || sig != syscall.SIGTERM {
			t.Errorf("stop() = %v, %v; want SIGTERM, true", sig, ok)
		}
		if ctx.Done() != nil {
			t.Error("Done after stop started a watcher: want the parent's (nil) channel")
		}
	})
	t.Run("storage wait", func(t *testing.T) {
		p := &Process{forward: make(chan os.Signal, 4)}
		ctx, stop := p.Context(context.Background())
		done := ctx.Done()
		p.forward <- syscall.SIGUSR1 // dropped: not a terminating signal
		p.forward <- syscall.SIGTERM
		<-done
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("Err() = %v, want context.Canceled", ctx.Err())
		}
		if c := context.Cause(ctx); c == nil || c.Error() != "received terminated" {
			t.Errorf("Cause = %v, want received terminated", c)
		}
		if sig, ok := stop(); !ok || sig != syscall.SIGTERM {
			t.Errorf("stop() = %v, %v; want SIGTERM, true", sig, ok)
		}
	})
	t.Run("nothing came", func(t *testing.T) {
		p := &Process{forward: make(chan os.Signal, 4)}
		ctx, stop := p.Context(context.Background())
		_ = ctx.Done()
		if sig, ok := stop(); ok {
			t.Errorf("stop() = %v, true; want nothing received", sig)
		}
	})
}
