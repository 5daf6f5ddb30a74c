package verify

import (
	"fmt"
	"strings"

	"imagectl/internal/exitcode"
)

// FailedError reports a verification that ran and in which at least one
// check failed. Its exit code is exitcode.VerifyFailed.
type FailedError struct {
	// Image is the verified reference.
	Image string
	// Failed are the names of the failed checks, in order.
	Failed []string
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("verification of %s failed: %s", e.Image, strings.Join(e.Failed, ", "))
}

// ExitCode implements exitcode.Coder.
func (e *FailedError) ExitCode() int { return exitcode.VerifyFailed }

// NotRunError reports a verification that could not run: no runtime, the
// image not reachable, or a probe that crashed before reporting. Its exit
// code is exitcode.VerifyNotRun.
type NotRunError struct {
	// Stage is what could not run, e.g. "podman" or "probe env".
	Stage string
	Err   error
}

func (e *NotRunError) Error() string {
	return fmt.Sprintf("verification could not run (%s): %v", e.Stage, e.Err)
}

func (e *NotRunError) Unwrap() error { return e.Err }

// ExitCode implements exitcode.Coder.
func (e *NotRunError) ExitCode() int { return exitcode.VerifyNotRun }
