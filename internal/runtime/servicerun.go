package runtime

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"imagectl/internal/logs"
)

// Restart backoff of a service that died: 1 s, doubling to 30 s; a service
// that stayed up for backoffReset starts over at 1 s.
const (
	backoffMin   = time.Second
	backoffMax   = 30 * time.Second
	backoffReset = 30 * time.Second
	// DefaultServiceStop bounds the stop of the services when no grace
	// period is set: each is SIGKILLed (its process group) this long after
	// the stop began.
	DefaultServiceStop = 10 * time.Second
)

// ServiceState is a service as the fingerprint lists it.
type ServiceState struct {
	Name  string `json:"name"`
	PID   int    `json:"pid,omitempty"`
	Port  int    `json:"port,omitempty"`
	User  string `json:"user,omitempty"`
	State string `json:"state"`
	// Detail says why a service is not running.
	Detail string `json:"detail,omitempty"`
}

// running is one supervised service.
type running struct {
	Service
	pid       int
	started   time.Time
	backoff   time.Duration
	restartAt time.Time // zero: none pending
	termSent  bool
	restarts  int
}

// Services are the services the init started; Supervise keeps them running.
type Services struct {
	list []*running
	out  io.Writer
	mu   *sync.Mutex
	// stop makes Supervise stop the services at once.
	stop bool
}

// RequestStop makes Supervise stop the services as soon as it starts (the
// command could not be started).
func (s *Services) RequestStop() {
	if s != nil {
		s.stop = true
	}
}

// States lists the services with their current pids.
func (s *Services) States() []ServiceState {
	if s == nil {
		return nil
	}
	var out []ServiceState
	for _, r := range s.list {
		st := ServiceState{Name: r.Name, PID: r.pid, Port: r.Port, User: r.User, State: "running"}
		if r.pid == 0 {
			st.State = "restarting"
		}
		out = append(out, st)
	}
	return out
}

// StartServices starts svcs in order, each in its own process group, its
// output (stdout and stderr) copied to out line by line, each line prefixed
// with "[name] ". A service that cannot be started is retried with backoff
// by Supervise like one that died.
func (p *Process) StartServices(ctx context.Context, svcs []Service, out io.Writer) *Services {
	<-p.ready
	s := &Services{out: out, mu: new(sync.Mutex)}
	for _, svc := range svcs {
		r := &running{Service: svc, backoff: backoffMin}
		s.list = append(s.list, r)
		s.start(ctx, r)
	}
	return s
}

func (s *Services) start(ctx context.Context, r *running) {
	log := logs.From(ctx)
	r.restartAt, r.termSent = time.Time{}, false
	pid, err := s.fork(r)
	if err != nil {
		log.Warn(fmt.Sprintf("service %s: %v; retrying in %v", r.Name, err, r.backoff))
		r.restartAt = time.Now().Add(r.backoff)
		r.backoff = min(2*r.backoff, backoffMax)
		return
	}
	r.pid, r.started = pid, time.Now()
	log.Debug("service started", "service", r.Name, "pid", pid)
}

func (s *Services) fork(r *running) (int, error) {
	rd, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		rd.Close()
		w.Close()
		return 0, err
	}
	defer null.Close()
	sigactionMu.Lock()
	pid, err := syscall.ForkExec(r.path, r.argv, &syscall.ProcAttr{
		Dir:   r.dir,
		Env:   r.env,
		Files: []uintptr{null.Fd(), w.Fd(), w.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Credential: r.cred},
	})
	sigactionMu.Unlock()
	w.Close()
	if err != nil {
		rd.Close()
		return 0, fmt.Errorf("starting %s: %w", r.path, err)
	}
	go s.copyLines(r.Name, rd)
	return pid, nil
}

// copyLines copies a service's output to s.out, one prefixed line at a time.
func (s *Services) copyLines(name string, rd *os.File) {
	defer rd.Close()
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		s.mu.Lock()
		_, _ = io.WriteString(s.out, "["+name+"] "+sc.Text()+"\n")
		s.mu.Unlock()
	}
}

func (s *Services) byPID(pid int) *running {
	if s == nil {
		return nil
	}
	for _, r := range s.list {
		if r.pid == pid && pid != 0 {
			return r
		}
	}
	return nil
}

// exited records that r's process ended with ws; unless stopping, it
// schedules the restart.
func (s *Services) exited(ctx context.Context, r *running, ws syscall.WaitStatus, stopping bool) {
	up := time.Since(r.started)
	r.pid = 0
	how := fmt.Sprintf("exited with status %d", ws.ExitStatus())
	if ws.Signaled() {
		how = "was killed by " + SignalName(ws.Signal())
	}
	if stopping {
		logs.From(ctx).Debug("service stopped", "service", r.Name, "how", how)
		return
	}
	if up >= backoffReset {
		r.backoff = backoffMin
	}
	r.restarts++
	logs.From(ctx).Warn(fmt.Sprintf("service %s %s after %v; restarting it in %v", r.Name, how, up.Round(time.Millisecond), r.backoff))
	r.restartAt = time.Now().Add(r.backoff)
	r.backoff = min(2*r.backoff, backoffMax)
}

// nextRestart is the earliest pending restart, or zero.
func (s *Services) nextRestart() time.Time {
	var t time.Time
	if s == nil {
		return t
	}
	for _, r := range s.list {
		if !r.restartAt.IsZero() && (t.IsZero() || r.restartAt.Before(t)) {
			t = r.restartAt
		}
	}
	return t
}

// restartDue starts the services whose restart time has come.
func (s *Services) restartDue(ctx context.Context) {
	if s == nil {
		return
	}
	now := time.Now()
	for _, r := range s.list {
		if !r.restartAt.IsZero() && !r.restartAt.After(now) {
			s.start(ctx, r)
		}
	}
}

// stopNext sends SIGTERM to the last-started service still running, once;
// services stop one at a time in reverse start order. It reports whether
// every service has stopped.
func (s *Services) stopNext(ctx context.Context) bool {
	if s == nil {
		return true
	}
	for i := len(s.list) - 1; i >= 0; i-- {
		r := s.list[i]
		r.restartAt = time.Time{}
		if r.pid == 0 {
			continue
		}
		if !r.termSent {
			r.termSent = true
			logs.From(ctx).Debug("stopping service", "service", r.Name, "pid", r.pid)
			if err := syscall.Kill(r.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
				logs.From(ctx).Warn(fmt.Sprintf("stopping service %s: %v", r.Name, err))
			}
		}
		return false
	}
	return true
}

// killAll SIGKILLs the process group of every service still running and
// reports how many there were.
func (s *Services) killAll() int {
	if s == nil {
		return 0
	}
	n := 0
	for _, r := range s.list {
		if r.pid != 0 {
			n++
			_ = syscall.Kill(-r.pid, syscall.SIGKILL)
			_ = syscall.Kill(r.pid, syscall.SIGKILL)
		}
	}
	return n
}

// signalAll sends sig to every running service.
func (s *Services) signalAll(sig syscall.Signal) {
	if s == nil {
		return
	}
	for _, r := range s.list {
		if r.pid != 0 {
			_ = syscall.Kill(r.pid, sig)
		}
	}
}
