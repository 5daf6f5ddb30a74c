package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Linux numbers its signals 1-64. glibc keeps 32 and 33 for its threads
// and programs built on it see SIGRTMIN as 34; SIGRTMAX is 64.
const (
	maxSignal   = 64
	glibcRTMin  = 34
	glibcRTMax  = 64
	sigCancel   = 32 // glibc's SIGCANCEL; no Go handler (sigtable: _SigSetStack)
	sigSetXID   = 33 // glibc's SIGSETXID; the Go runtime's per-thread-syscall signal
	sigSyncCall = 34 // musl's SIGSYNCCALL; no Go handler; glibc's SIGRTMIN
)

// notForwarded are the signals the init does not pass on, and why. Every
// other signal from 1 to 64 is forwarded (see ForwardedSignals).
var notForwarded = map[syscall.Signal]string{
	unix.SIGKILL: "cannot be caught",
	unix.SIGSTOP: "cannot be caught",
	unix.SIGCHLD: "the init's own: it reaps the children",
	unix.SIGTTIN: "job control of the init itself (tini does not forward it either)",
	unix.SIGTTOU: "job control of the init itself (tini does not forward it either)",
	unix.SIGPROF: "the Go runtime keeps it for its profiler and never hands it to os/signal",
	unix.SIGURG:  "the Go runtime sends it to its own threads to preempt goroutines, and os/signal cannot tell those from a kill(2): forwarding it would hand the command spurious SIGURGs",
	sigCancel:    "reserved by glibc (SIGCANCEL); the Go runtime installs no handler for it",
	sigSetXID:    "reserved by glibc (SIGSETXID); the Go runtime uses it itself",
	sigSyncCall:  "SIGRTMIN of glibc programs; the Go runtime installs no handler for it (musl reserves it)",
}

// ForwardedSignals returns the signals the init passes on to the command,
// in numeric order: every signal from 1 to 64 except those
// NotForwardedSignals lists. The synchronous-fault signals (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT) are among them: the Go runtime
// hands one to os/signal only when it was sent by kill(2) or tgkill(2)
// (si_code SI_USER or SI_TKILL); a real fault of the init still crashes it
// with a traceback.
func ForwardedSignals() []syscall.Signal {
	var out []syscall.Signal
	for s := syscall.Signal(1); s <= maxSignal; s++ {
		if _, skip := notForwarded[s]; !skip {
			out = append(out, s)
		}
	}
	return out
}

// NotForwardedSignals returns the signals the init does not forward, each
// with the reason.
func NotForwardedSignals() map[syscall.Signal]string {
	out := make(map[syscall.Signal]string, len(notForwarded))
	for s, why := range notForwarded {
		out[s] = why
	}
	return out
}

// SignalName names s the way kill -l and tini do: SIGTERM, SIGRTMIN+3.
// 32 and 33 have no name in glibc and are "signal 32", "signal 33".
func SignalName(s syscall.Signal) string {
	switch {
	case s >= glibcRTMin && s <= glibcRTMax:
		if s == glibcRTMin {
			return "SIGRTMIN"
		}
		return "SIGRTMIN+" + strconv.Itoa(int(s-glibcRTMin))
	case s == sigCancel || s == sigSetXID:
		return "signal " + strconv.Itoa(int(s))
	}
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}

// ParseSignal reads a signal as tini's -p does (SIGKILL), and also without
// the SIG prefix (KILL), as a number (9), or as SIGRTMIN+N / SIGRTMAX-N.
func ParseSignal(v string) (syscall.Signal, error) {
	s := strings.ToUpper(strings.TrimSpace(v))
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > maxSignal {
			return 0, fmt.Errorf("signal %q: want 1-%d", v, maxSignal)
		}
		return syscall.Signal(n), nil
	}
	if !strings.HasPrefix(s, "SIG") {
		s = "SIG" + s
	}
	rt := func(base int, rest string, sign int) (syscall.Signal, error) {
		off := 0
		if rest != "" {
			n, err := strconv.Atoi(rest)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("signal %q: want SIGRTMIN+N or SIGRTMAX-N", v)
			}
			off = n
		}
		n := base + sign*off
		if n < glibcRTMin || n > glibcRTMax {
			return 0, fmt.Errorf("signal %q is outside SIGRTMIN..SIGRTMAX (%d-%d)", v, glibcRTMin, glibcRTMax)
		}
		return syscall.Signal(n), nil
	}
	switch {
	case s == "SIGRTMIN" || strings.HasPrefix(s, "SIGRTMIN+"):
		return rt(glibcRTMin, strings.TrimPrefix(strings.TrimPrefix(s, "SIGRTMIN"), "+"), 1)
	case s == "SIGRTMAX" || strings.HasPrefix(s, "SIGRTMAX-"):
		return rt(glibcRTMax, strings.TrimPrefix(strings.TrimPrefix(s, "SIGRTMAX"), "-"), -1)
	}
	if n := unix.SignalNum(s); n != 0 {
		return n, nil
	}
	return 0, fmt.Errorf("unknown signal %q: want a name like SIGKILL or a number", v)
}
