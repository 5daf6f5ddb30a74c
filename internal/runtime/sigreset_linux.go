package runtime

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction is the kernel's struct sigaction on linux/amd64 and arm64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const sigIgn = 1 // SIG_IGN

// resetIgnoredSignals sets every signal the init inherited as ignored back
// to its default. Ignored dispositions survive fork and exec, so without
// this the command would inherit whatever its launcher ignored (a
// background shell's SIGINT, a harness's real-time signals) instead of the
// clean slate a process gets under a real init. Signals the Go runtime
// handles are never SIG_IGN, so their handlers are not touched.
func resetIgnoredSignals() {
	for sig := 1; sig <= 64; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		var old kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			continue
		}
		if old.handler != sigIgn {
			continue
		}
		var dfl kernelSigaction // SIG_DFL, no flags, empty mask
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	}
}
