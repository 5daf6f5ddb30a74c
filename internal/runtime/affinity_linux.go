package runtime

import (
	"errors"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// startupPin keeps the init's signal registrations on one CPU.
//
// Why: catching a signal with os/signal is a synchronous hand-off to the Go
// runtime's signal-mask goroutine, which is locked to its own thread
// (runtime.sigenable: enableSigChan <- sig; <-maskUpdatedChan), so each of
// the 57 signals the init catches wakes one thread and puts another to
// sleep, twice (strace: a FUTEX_WAKE and a FUTEX_WAIT on each side per
// signal). The kernel puts a woken thread on an idle CPU when there is one,
// and waking an idle CPU, in a virtual machine a halted vCPU, is what the
// registrations spend most of their millisecond on. With the two threads on
// the same CPU a wake-up is a context switch there. See docs/init.md
// ("Start-up").
//
// Only the registrations are pinned: the main goroutine stays locked to its
// thread, which keeps the launcher's CPUs, so the preparation steps run
// beside them on another CPU, and the command, forked from that thread,
// inherits the launcher's affinity as it always did. The other threads get
// the launcher's CPUs back as soon as the registrations are done
// (restoreAll), and again after the fork; or at once when that CPU turns
// out to be busy (see notify).
type startupPin struct {
	orig   unix.CPUSet
	pinned bool
	// caught counts the registrations made through notify; released is
	// set once the threads got their CPUs back early (see notify).
	caught   int
	released bool
}

// busyCPU is how long one registration may take before notify gives up the
// single CPU: tens of microseconds when that CPU is free (5 to 50 measured),
// milliseconds when it runs someone else's work (a loaded host), where the
// threads do better with every CPU the launcher allows.
var busyCPU = 500 * time.Microsecond

// notify catches sigs on c one by one, as signal.Notify does. It is called
// from the registering goroutine only. When one registration took longer
// than busyCPU (the first excepted: it also starts the runtime's goroutine
// and its thread), the CPU is busy: the threads get the launcher's CPUs
// back at once, and the rest is registered as it was before pinning.
func (p *startupPin) notify(c chan<- os.Signal, sigs ...os.Signal) {
	for _, s := range sigs {
		start := time.Now()
		signal.Notify(c, s)
		p.caught++
		if p.pinned && !p.released && p.caught > 1 && time.Since(start) > busyCPU {
			p.released = true
			p.restoreAll()
		}
	}
}

// pinOthers pins every thread of the process but the calling one to one
// CPU of the caller's affinity, the next after the one it runs on. The
// caller must be locked to its thread (runtime.LockOSThread). It changes
// nothing when the launcher allows one CPU only, or when the affinity
// cannot be read or set (a seccomp profile that refuses sched_setaffinity):
// the init then starts as before, only slower.
func pinOthers() *startupPin {
	p := &startupPin{}
	if unix.SchedGetaffinity(0, &p.orig) != nil || p.orig.Count() < 2 {
		return p
	}
	var cpu uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return p
	}
	// The next allowed CPU after the caller's: a neighbour, and not the same
	// CPU (the lowest one, say) for every container started on the node.
	var one unix.CPUSet
	for d := 1; d < len(one)*64; d++ {
		if i := (int(cpu) + d) % (len(one) * 64); p.orig.IsSet(i) {
			one.Set(i)
			break
		}
	}
	self := unix.Gettid()
	// Threads created from here on inherit the affinity of the thread that
	// creates them: one pass covers them too, except those created during
	// the pass by a thread not yet pinned, or by the caller's, which only
	// makes the start-up slower.
	p.pinned = eachThread(func(tid int) {
		if tid != self {
			_ = unix.SchedSetaffinity(tid, &one)
		}
	}) == nil
	return p
}

// restoreAll gives every thread of the process the launcher's affinity
// back (a thread created during the pass by one not yet restored keeps the
// single CPU until the next pass).
func (p *startupPin) restoreAll() {
	if p.pinned {
		_ = eachThread(func(tid int) { _ = unix.SchedSetaffinity(tid, &p.orig) })
	}
}

// eachThread calls f with the id of every thread of the process, read from
// /proc/self/task with plain system calls (see rawfile.go: no os.File).
func eachThread(f func(tid int)) error {
	fd, err := openRetry("/proc/self/task", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	names := make([]string, 0, 16)
	for {
		n, err := syscall.Getdents(fd, buf[:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			break
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
	for _, name := range names {
		if tid, err := strconv.Atoi(name); err == nil {
			f(tid)
		}
	}
	return nil
}
