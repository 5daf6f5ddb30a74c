package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"imagectl/internal/logs"
)

// terminating reports whether s, arriving before the command starts, stops
// the init (with 128+n) instead of starting the command; once the command
// runs, it is also what starts the grace period, when one is set.
func terminating(s syscall.Signal) bool {
	return s == syscall.SIGTERM || s == syscall.SIGINT
}

// Process is the supervisor's view of the process running the init: it
// catches signals before any work starts, so a SIGTERM that arrives while the
// init waits for storage is not lost.
type Process struct {
	forward chan os.Signal
	chld    chan os.Signal
	// ready is closed once every signal is caught (see Listen).
	ready chan struct{}
}

// ListenOptions are what Listen sets up besides catching signals.
type ListenOptions struct {
	// RequireSubreaper makes a failure to become a child subreaper (when
	// not PID 1) an error; otherwise it is returned as a warning (see Listen).
	RequireSubreaper bool
	// ParentDeath, when non-zero, is the signal the kernel sends the init
	// when its parent dies (prctl PR_SET_PDEATHSIG, tini's -p); it is
	// forwarded like any other.
	ParentDeath syscall.Signal
}

// urgentSignals are caught before Listen returns: uncaught, the Go runtime
// would kill the init for them (SIGHUP, SIGINT, SIGTERM, and SIGPIPE when
// the init writes its log to a closed pipe), dump and exit (SIGQUIT,
// SIGABRT), or crash (the fault signals, when sent by kill).
var urgentSignals = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT,
	syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGPIPE, syscall.SIGTERM, syscall.SIGSTKFLT,
	syscall.SIGSYS,
}

// Listen starts catching every signal in ForwardedSignals and SIGCHLD,
// catches (and drops) SIGTTIN and SIGTTOU, resets what the launcher left
// ignored to the default, and makes the calling process a child subreaper
// when it is not PID 1, so that orphaned grandchildren are reparented to it
// and reaped. Call it first thing. warn is a problem the init can run with
// (no subreaper); err is one it cannot.
//
// Each os/signal registration is a round trip to the runtime's signal
// thread (tens of microseconds on a busy machine; about 0.5 ms for all 55):
// only urgentSignals are registered before Listen returns; the rest,
// which the runtime drops while nobody catches them (as the init drops any
// signal but SIGTERM/SIGINT before the command starts), are registered
// beside the preparation steps, and StartAs waits for them before it forks
// the command.
func Listen(o ListenOptions) (p *Process, warn, err error) {
	p = &Process{
		forward: make(chan os.Signal, 128),
		chld:    make(chan os.Signal, 1),
		ready:   make(chan struct{}),
	}
	// First, before anything is caught: a disposition reset after a
	// registration could undo it. The command, forked later, inherits the
	// defaults (the handlers the Go runtime installs are reset in the child).
	resetIgnoredSignals()
	signal.Notify(p.forward, urgentSignals...)
	urgent := map[os.Signal]bool{}
	for _, s := range urgentSignals {
		urgent[s] = true
	}
	var rest []os.Signal
	for _, s := range ForwardedSignals() {
		if !urgent[s] {
			rest = append(rest, s)
		}
	}
	go func() {
		signal.Notify(p.forward, rest...)
		signal.Notify(p.chld, syscall.SIGCHLD)
		// Caught and dropped, never ignored (an ignored disposition would
		// be inherited by the command): writing to the terminal from the
		// background must not stop the init.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGTTIN, syscall.SIGTTOU)
		close(p.ready)
	}()
	if o.ParentDeath != 0 {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(o.ParentDeath), 0, 0, 0); err != nil {
			return p, nil, fmt.Errorf("setting the parent-death signal %s: %w", SignalName(o.ParentDeath), err)
		}
	}
	if os.Getpid() != 1 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			err = fmt.Errorf("becoming a child subreaper: %w", err)
			if o.RequireSubreaper {
				return p, nil, err
			}
			return p, err, nil
		}
	}
	return p, nil, nil
}

// Interrupted returns the first terminating signal received so far, if any,
// without blocking. Signals that do not terminate are dropped: there is no
// command yet to forward them to.
func (p *Process) Interrupted() (syscall.Signal, bool) {
	for {
		select {
		case s := <-p.forward:
			if sig := s.(syscall.Signal); terminating(sig) {
				return sig, true
			}
		default:
			return 0, false
		}
	}
}

// Context returns a context cancelled when a terminating signal arrives, for
// the preparation steps (storage wait) that run before the command starts.
// The returned stop function must be called before StartAs; it reports the
// terminating signal, if one came before the command started.
func (p *Process) Context(ctx context.Context) (context.Context, func() (syscall.Signal, bool)) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	finished := make(chan struct{})
	var got syscall.Signal
	go func() {
		defer close(finished)
		for {
			select {
			case s := <-p.forward:
				if sig := s.(syscall.Signal); terminating(sig) {
					got = sig
					cancel(fmt.Errorf("received %v", sig))
					return
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() (syscall.Signal, bool) {
		close(done)
		<-finished
		cancel(nil)
		if got != 0 {
			return got, true
		}
		return p.Interrupted()
	}
}

// WaitOptions say how Supervise supervises the command.
type WaitOptions struct {
	// GracePeriod, when positive, turns escalation on: the command's process
	// group is killed (SIGKILL) this long after the first SIGTERM or SIGINT
	// was forwarded. Zero (the default) never kills: the init waits as long
	// as the command lives, and the orchestrator owns the deadline.
	GracePeriod time.Duration
	// ProcessGroup forwards signals to the command's whole process group
	// (tini -g) instead of the command alone.
	ProcessGroup bool
	// WarnReap logs a warning for every reaped zombie that is not the
	// command (tini -w).
	WarnReap bool
}

// StartAs starts argv with env as the init's child, run as id (setgroups,
// setgid, setuid between fork and exec; nil runs it as the init runs), in
// its own process group (in the terminal's foreground when the init has
// one). When it cannot be started, the returned code is 127 (not found) or
// 126 (not executable).
func (p *Process) StartAs(ctx context.Context, argv, env []string, id *Identity) (pid, code int, err error) {
	if len(argv) == 0 {
		return 0, 127, errors.New("no command to run")
	}
	// Every forwarded signal is caught before the command exists, so none
	// sent to the init after the command started is dropped.
	<-p.ready
	path, err := lookPath(argv[0], env)
	if err != nil {
		return 0, 127, err
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Credential: id.credential()}
	if foregroundTerminal(0) {
		// Own process group in the foreground of the terminal, like tini: a
		// ^C from the terminal then reaches the command once, not twice.
		attr.Foreground, attr.Ctty = true, 0
	}
	sigactionMu.Lock()
	pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys:   attr,
	})
	sigactionMu.Unlock()
	if err != nil {
		code := 126
		if errors.Is(err, syscall.ENOENT) {
			code = 127
		}
		return 0, code, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	logs.From(ctx).Debug("started", "pid", pid, "command", argv)
	return pid, 0, nil
}

// Supervise forwards every caught signal to pid (or its process group),
// reaps every child that exits (the command's orphans included) and returns
// the command's exit code: its own status, or 128+n when signal n killed it.
// Services run beside the command: pid is the command (0 when the
// container runs the services alone) and svcs the services StartServices
// started (nil for none). A service that dies is restarted
// with backoff (1 s doubling to 30 s). When the command exits, or a SIGTERM
// or SIGINT arrives with no command running, the services are stopped one
// at a time in reverse start order (SIGTERM, then the next once it has
// exited); whatever still runs when the grace period (DefaultServiceStop
// without one) is over is killed. It returns the command's exit code; with
// no command, 0 when every service stopped in time, 137 when one had to be
// killed.
func (p *Process) Supervise(ctx context.Context, pid int, svcs *Services, o WaitOptions) int {
	log := logs.From(ctx)
	target := pid
	if o.ProcessGroup {
		target = -pid
	}
	cmdDone := pid == 0
	code := 0
	stopping, killed := false, false
	var killTimer <-chan time.Time
	beginStop := func() {
		if stopping {
			return
		}
		stopping = true
		if killTimer == nil {
			d := o.GracePeriod
			if d <= 0 {
				d = DefaultServiceStop
			}
			killTimer = time.After(d)
		}
	}
	if svcs != nil && svcs.stop {
		beginStop()
	}
	for {
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || got <= 0 {
				break
			}
			if got == pid && !cmdDone {
				switch {
				case ws.Exited():
					code, cmdDone = ws.ExitStatus(), true
				case ws.Signaled():
					code, cmdDone = 128+int(ws.Signal()), true
				}
				continue
			}
			if r := svcs.byPID(got); r != nil {
				svcs.exited(ctx, r, ws, stopping)
				continue
			}
			if o.WarnReap {
				log.Warn(fmt.Sprintf("reaped zombie process pid=%d", got))
			}
		}
		if pid != 0 && cmdDone {
			beginStop()
		}
		if stopping && svcs.stopNext(ctx) {
			if pid == 0 && killed {
				return 128 + int(syscall.SIGKILL)
			}
			return code
		}
		if pid == 0 && (svcs == nil || len(svcs.list) == 0) {
			return 0
		}
		var restart <-chan time.Time
		if t := svcs.nextRestart(); !stopping && !t.IsZero() {
			restart = time.After(time.Until(t))
		}
		select {
		case s := <-p.forward:
			sig := s.(syscall.Signal)
			switch {
			case !cmdDone:
				log.Debug("forwarding signal", "signal", SignalName(sig), "to", target)
				if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
					log.Warn(fmt.Sprintf("forwarding %s to %d failed: %v", SignalName(sig), target, err))
				}
				if o.GracePeriod > 0 && terminating(sig) && killTimer == nil {
					killTimer = time.After(o.GracePeriod)
				}
			case terminating(sig):
				log.Debug("stopping the services", "signal", SignalName(sig))
				beginStop()
			default:
				svcs.signalAll(sig)
			}
		case <-killTimer:
			killTimer = nil
			if !cmdDone {
				log.Warn(fmt.Sprintf("the command did not exit within the %v grace period after a stop signal; killing its process group (raise or unset runtime.grace_period / --grace-period if it needs longer to shut down)", o.GracePeriod))
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if n := svcs.killAll(); n > 0 {
				killed = true
				log.Warn(fmt.Sprintf("%d service(s) did not stop in time; killed them", n))
			}
		case <-restart:
			svcs.restartDue(ctx)
		case <-p.chld:
		}
	}
}

// lookPath finds file in the PATH of env (the command's environment, not
// the init's).
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in PATH %s", file, pathEnv)
}

// foregroundTerminal reports whether fd is a terminal whose foreground
// process group is the init's own: only then may the command take it over.
func foregroundTerminal(fd int) bool {
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}
