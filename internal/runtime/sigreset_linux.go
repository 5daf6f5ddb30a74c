package runtime

import (
	"fmt"
	"os"
	goruntime "runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The command starts with a clean slate: no signal blocked, every signal at
// its default disposition, whatever the init's launcher left behind.
//
// Dispositions: exec keeps SIG_IGN, so resetIgnoredSignals (in Listen) sets
// every inherited SIG_IGN back to SIG_DFL; handlers the Go runtime installed
// are reset to SIG_DFL in the forked child by the runtime itself.
//
// Mask: a Go program hands every process it forks the mask the runtime
// inherited at start-up (there is no per-child hook), so the only way to give
// the command an empty mask is to start the init itself with one.
// CleanSignalMask re-executes the init with an empty mask when it finds
// signals blocked; that costs one more exec of the init, only then.

// kernelSigaction is the kernel's struct sigaction on linux/amd64 and arm64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const sigIgn = 1 // SIG_IGN

func sigaction(sig int, act, old *kernelSigaction) syscall.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	return e
}

// resetIgnoredSignals sets every signal the init inherited as ignored back
// to its default. Ignored dispositions survive fork and exec, so without
// this the command would inherit whatever its launcher ignored (a
// background shell's SIGINT, a harness's real-time signals) instead of the
// clean slate a process gets under a real init. Signals the Go runtime
// handles are never SIG_IGN, so their handlers are not touched.
func resetIgnoredSignals() {
	for sig := 1; sig <= maxSignal; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		var old kernelSigaction
		if sigaction(sig, nil, &old) != 0 || old.handler != sigIgn {
			continue
		}
		var dfl kernelSigaction // SIG_DFL, no flags, empty mask
		_ = sigaction(sig, &dfl, nil)
	}
}

// CleanSignalMask makes sure the command will start with no signal
// blocked. When the calling thread has signals blocked (the launcher's
// mask, which the Go runtime keeps for every thread and every child), it
// re-executes /proc/self/exe with the same arguments and environment and an
// empty mask, and does not return. Call it first thing in main, before
// Listen. It returns an error only when the re-exec failed; the init then
// runs on, and the command inherits the launcher's mask.
//
// Signals the Go runtime always unblocks for itself (SIGHUP, SIGINT,
// SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGTERM,
// SIGSTKFLT, SIGCHLD, SIGPROF, SIGSYS, SIGURG and 32-34) cannot be seen
// blocked here; a launcher that blocked only some of those and nothing else
// passes them on to the command. A signal the launcher blocked and left
// pending is delivered when the mask is cleared, before anything catches
// it: dropped, like any signal but SIGTERM/SIGINT that comes before the
// command starts (and SIGTERM/SIGINT pending at the exec reach the Go
// runtime before it installs its handlers: as PID 1 the kernel drops them).
func CleanSignalMask() error {
	// Every Go thread has the same mask (the runtime's initial one, less what
	// it unblocks), so any thread tells; only the re-exec needs this one.
	var blocked unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, nil, &blocked); err != nil || blocked.Val[0] == 0 {
		return nil
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, nil, &blocked); err != nil || blocked.Val[0] == 0 {
		return nil
	}
	var empty unix.Sigset_t
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil)
	err := syscall.Exec("/proc/self/exe", os.Args, os.Environ())
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &blocked, nil)
	return fmt.Errorf("re-executing the init with an empty signal mask: %w; the command inherits the launcher's blocked signals", err)
}
