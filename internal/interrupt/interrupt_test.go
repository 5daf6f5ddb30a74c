package interrupt

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"imagectl/internal/exitcode"
)

func raise(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), s); err != nil {
		t.Fatal(err)
	}
}

func TestNotifyFirstSignalCancelsSecondExits(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			exited := make(chan os.Signal, 1)
			ctx, stop := Notify(context.Background(), func(s os.Signal) { exited <- s }, Signals...)
			defer stop()
			raise(t, sig)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatalf("ctx not cancelled 5 s after %v", sig)
			}
			var in *exitcode.Interrupt
			if cause := context.Cause(ctx); !errors.As(cause, &in) || in.Signal != sig {
				t.Fatalf("context.Cause = %v, want an *exitcode.Interrupt of %v", cause, sig)
			}
			if !errors.Is(context.Cause(ctx), context.Canceled) {
				t.Errorf("the cause %v is not a context.Canceled", context.Cause(ctx))
			}
			select {
			case s := <-exited:
				t.Fatalf("exit(%v) called at the first signal", s)
			case <-time.After(100 * time.Millisecond):
			}
			raise(t, sig)
			select {
			case s := <-exited:
				if s != sig {
					t.Errorf("exit(%v), want exit(%v)", s, sig)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("exit not called 5 s after the second %v", sig)
			}
		})
	}
}

func TestNotifyStop(t *testing.T) {
	ctx, stop := Notify(context.Background(), func(s os.Signal) { t.Errorf("exit(%v) called", s) }, Signals...)
	stop()
	stop() // twice is fine
	if ctx.Err() == nil {
		t.Fatal("ctx not cancelled by stop")
	}
	var in *exitcode.Interrupt
	if errors.As(context.Cause(ctx), &in) {
		t.Errorf("stop's cause is an interrupt: %v", context.Cause(ctx))
	}
	if err := exitcode.FromContext(ctx, nil); err != nil {
		t.Errorf("FromContext(stopped ctx, nil) = %v, want nil", err)
	}
}
