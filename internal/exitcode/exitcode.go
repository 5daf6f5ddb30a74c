// Package exitcode is the one place where imagectl's process exit codes are
// defined. Libraries return typed errors that carry one of these codes through
// an ExitCode method; cmd/imagectl maps any error to its code with Code.
//
// The codes are published in the README and are stable.
package exitcode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

const (
	// OK: the command did what it was asked.
	OK = 0
	// Failure: a spec, lock or other input error, or any error without a
	// more specific code.
	Failure = 1
	// Usage: bad flags or arguments.
	Usage = 2
	// LockStale: the spec or the catalog changed since the lock was written.
	LockStale = 3
	// VerifyFailed: verification ran and at least one check failed.
	VerifyFailed = 4
	// PromotionRefused: a promotion gate refused a digest.
	PromotionRefused = 5
	// LockTampered: the lock file's content does not match its own digest.
	LockTampered = 6
	// VerifyNotRun: verification could not run (no runtime, image not
	// reachable, probe crashed before reporting).
	VerifyNotRun = 7
	// DriverTooOld: the NVIDIA driver is below the image's locked floor
	// (init, with the fail policy).
	DriverTooOld = 8
	// PinsMoved: imagectl bump moved at least one pin (or, with --dry-run,
	// would move): a CI job commits the change or opens a pull request.
	PinsMoved = 10
	// Unavailable: a service (buildkitd, registry) could not be reached.
	Unavailable = 69
	// AuthFailed: a registry or index refused access (401/403): missing,
	// wrong or insufficient credentials.
	AuthFailed = 77
	// StorageNotReady: the init waited for required storage and it never
	// became ready.
	StorageNotReady = 75
	// Interrupted: the command was cancelled by SIGINT or SIGTERM.
	Interrupted = 130
)

// Coder is implemented by errors that carry their own exit code.
type Coder interface {
	ExitCode() int
}

// Error attaches an exit code to an error.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode implements Coder.
func (e *Error) ExitCode() int { return e.Code }

// Wrap returns err carrying code; a nil err stays nil.
func Wrap(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Code returns the exit code for err: OK for nil, the code of the first
// Coder in err's chain, Failure otherwise.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return Failure
}

// Interrupt is the cause of a context cancelled by a signal (SIGINT,
// SIGTERM): its exit code is Interrupted, and it is a context.Canceled.
type Interrupt struct {
	Signal os.Signal
}

func (e *Interrupt) Error() string {
	name := e.Signal.String()
	switch e.Signal {
	case syscall.SIGINT:
		name = "SIGINT"
	case syscall.SIGTERM:
		name = "SIGTERM"
	}
	return "interrupted by " + name
}

// ExitCode implements Coder: Interrupted.
func (e *Interrupt) ExitCode() int { return Interrupted }

// Is reports context.Canceled as the same error.
func (e *Interrupt) Is(target error) bool { return target == context.Canceled }

// FromContext returns err as the command that ran with ctx ends with it:
// when a signal cancelled ctx, the signal's *Interrupt joined with err
// (exit code Interrupted, whatever err is, nil included: the work was cut
// short); otherwise err as it is.
func FromContext(ctx context.Context, err error) error {
	var in *Interrupt
	if ctx.Err() == nil || !errors.As(context.Cause(ctx), &in) {
		return err
	}
	if err == nil {
		return in
	}
	return fmt.Errorf("%w: %w", in, err)
}
