package runtime

import (
	"errors"
	"io"
	goruntime "runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LogWriter writes the init's own messages to fd (stderr) without raising
// SIGPIPE when nobody reads it any more. The init forwards every SIGPIPE it
// gets to the command, so the kernel's SIGPIPE for the init's own write to a
// closed log pipe would kill the command; instead the write blocks SIGPIPE
// on its thread, and takes back the one the kernel queued there. (It also
// bypasses os.File, whose write to fd 1 or 2 re-raises SIGPIPE on EPIPE.) A
// message to a closed stderr is lost; the command runs on. Writes are
// serialized with each other and with the forks of the command and the
// services, so that neither inherits the SIGTTOU ignore.
func LogWriter(fd int) io.Writer { return logWriter(fd) }

type logWriter int

// sigactionMu serializes the writes' SIGTTOU juggling with each other (two
// interleaved saves and restores would leave SIGTTOU ignored) and with the
// forks of the command and the services (which would inherit the ignore).
var sigactionMu sync.Mutex

func (w logWriter) Write(b []byte) (int, error) {
	sigactionMu.Lock()
	defer sigactionMu.Unlock()
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var pipe, old unix.Sigset_t
	pipe.Val[0] = 1 << (unix.SIGPIPE - 1)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &pipe, &old); err != nil {
		return 0, err
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) //nolint:errcheck
	// SIGTTOU ignored for the write, as tini ignores it: with the terminal's
	// tostop set and the command in the foreground, a caught SIGTTOU makes
	// the kernel restart the write forever. (Only around the write: the
	// init forks the command from the goroutine that logs before it, so the
	// command never inherits the SIG_IGN.)
	var ttou kernelSigaction
	ign := kernelSigaction{handler: sigIgn}
	if sigaction(int(unix.SIGTTOU), &ign, &ttou) == 0 {
		defer sigaction(int(unix.SIGTTOU), &ttou, nil) //nolint:errcheck
	}
	n := 0
	for n < len(b) {
		m, err := syscall.Write(int(w), b[n:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			if errors.Is(err, syscall.EPIPE) {
				// The kernel queued SIGPIPE on this thread: take it back.
				var zero unix.Timespec
				_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(&pipe)), 0, uintptr(unsafe.Pointer(&zero)), 8, 0, 0)
			}
			return n, err
		}
		n += m
	}
	return n, nil
}
