package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"imagectl/internal/runtime"
)

// The scenarios a user migrating from tini tries, each run against
// imagectl-init and, as the reference, against Debian's tini (hack/deps.sh
// installs it) in the same test. Where the two differ, the test says how,
// and docs/init.md ("Coming from tini") lists it.

// initUnderTest is one init and how it is started with flags.
type initUnderTest struct {
	name string
	bin  string
}

func (i initUnderTest) argv(flags ...string) []string {
	return append(append([]string{i.bin}, flags...), "--")
}

func (i initUnderTest) isTini() bool { return i.name == "tini" }

// inits returns imagectl-init and tini; tini's subtests skip, saying so,
// where it is not installed.
func inits() []initUnderTest {
	return []initUnderTest{{"imagectl-init", initBin}, {"tini", "tini"}}
}

func needInit(t *testing.T, i initUnderTest) {
	t.Helper()
	if i.isTini() {
		if _, err := exec.LookPath("tini"); err != nil {
			t.Skip("the reference needs Debian's tini (hack/deps.sh installs it)")
		}
	}
}

// sigChild is the command for the signal scenarios: it blocks every signal
// it can and takes them with sigwaitinfo, printing "got N FROM" for each
// (FROM is the sender's PID: the init is 1), and exits 0 on SIGTERM.
// glibc keeps 32 and 33 from it.
const sigChild = `
import signal, sys
sigs = [s for s in range(1, 65) if s not in (9, 19, 32, 33)]
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
print("ready", flush=True)
while True:
    i = signal.sigwaitinfo(sigs)
    print("got", i.si_signo, i.si_pid, flush=True)
    if i.si_signo == signal.SIGTERM:
        sys.exit(0)
`

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 (hack/deps.sh installs it)")
	}
}

// scanSignals sends each of sigs to the init (PID 1 in its namespace), one
// at a time, then SIGTERM, and returns the signals the command received
// from the init, and the init's exit code. A signal expected to arrive is
// waited for (up to 10 s); one not expected gets 150 ms to show up anyway.
func scanSignals(t *testing.T, i initUnderTest, sigs []syscall.Signal, expect map[syscall.Signal]bool) (map[syscall.Signal]bool, int) {
	t.Helper()
	s := startRun(t, run{init: i.argv()}, "python3", "-c", sigChild)
	if l := s.line(); l != "ready" {
		t.Fatalf("%s: first line %q, want ready", i.name, l)
	}
	pid := s.initPID()
	lines := make(chan string, 128)
	go func() {
		sc := bufio.NewScanner(s.stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	got := map[syscall.Signal]bool{}
	record := func(l string) {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "got" {
			t.Errorf("%s: the command printed %q", i.name, l)
			return
		}
		n, _ := strconv.Atoi(f[1])
		if f[2] != "1" {
			t.Errorf("%s: the command got %s from pid %s, want it from the init (1)", i.name, runtime.SignalName(syscall.Signal(n)), f[2])
		}
		got[syscall.Signal(n)] = true
	}
	for _, sig := range sigs {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatalf("%s: kill -%d: %v (the init died?)", i.name, sig, err)
		}
		wait := 150 * time.Millisecond
		if expect[sig] {
			wait = 10 * time.Second
		}
		deadline := time.After(wait)
	collect:
		for !got[sig] {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("%s: the command's output ended after %s (init died? stderr: %s)", i.name, runtime.SignalName(sig), s.stderr.String())
				}
				record(l)
			case <-deadline:
				break collect
			}
		}
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("%s: the init is gone after the scan: %v", i.name, err)
	}
	for l := range lines {
		record(l)
	}
	code, _ := s.wait()
	delete(got, syscall.SIGTERM)
	return got, code
}

func names(m map[syscall.Signal]bool) string {
	var out []int
	for s := range m {
		out = append(out, int(s))
	}
	sort.Ints(out)
	var n []string
	for _, s := range out {
		n = append(n, runtime.SignalName(syscall.Signal(s)))
	}
	return strings.Join(n, " ")
}

func diffSets(want, got map[syscall.Signal]bool) (missing, extra map[syscall.Signal]bool) {
	missing, extra = map[syscall.Signal]bool{}, map[syscall.Signal]bool{}
	for s := range want {
		if !got[s] {
			missing[s] = true
		}
	}
	for s := range got {
		if !want[s] {
			extra[s] = true
		}
	}
	return missing, extra
}

var faultSignals = []syscall.Signal{syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS}

// tiniForwards is what tini 0.19 forwards, the reference: every signal but
// the synchronous-fault ones (tini leaves them at their default, so as PID 1
// the kernel drops them), SIGTTIN/SIGTTOU (ignored), SIGCHLD, and glibc's 32
// and 33.
func tiniForwards(s syscall.Signal) bool {
	switch s {
	case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGCHLD, syscall.SIGTTIN, syscall.SIGTTOU, 32, 33:
		return false
	}
	for _, f := range faultSignals {
		if s == f {
			return false
		}
	}
	return true
}

func TestStrayFaultSignals(t *testing.T) {
	needPython(t)
	for _, i := range inits() {
		t.Run(i.name, func(t *testing.T) {
			needInit(t, i)
			t.Parallel()
			want := map[syscall.Signal]bool{}
			if !i.isTini() {
				for _, s := range faultSignals {
					want[s] = true
				}
			}
			got, code := scanSignals(t, i, faultSignals, want)
			if code != 0 {
				t.Errorf("%s: exit %d after the stray signals and SIGTERM, want the command's 0: the init did not survive", i.name, code)
			}
			if missing, extra := diffSets(want, got); len(missing)+len(extra) > 0 {
				t.Errorf("%s: stray fault signals: not forwarded %s; forwarded unexpectedly %s", i.name, names(missing), names(extra))
			}
		})
	}
}

func TestEverySignalForwarded(t *testing.T) {
	needPython(t)
	var all []syscall.Signal
	for s := syscall.Signal(1); s <= 64; s++ {
		if s != syscall.SIGKILL && s != syscall.SIGSTOP && s != syscall.SIGTERM {
			all = append(all, s)
		}
	}
	for _, i := range inits() {
		t.Run(i.name, func(t *testing.T) {
			needInit(t, i)
			t.Parallel()
			want := map[syscall.Signal]bool{}
			if i.isTini() {
				for _, s := range all {
					if tiniForwards(s) {
						want[s] = true
					}
				}
			} else {
				for _, s := range runtime.ForwardedSignals() {
					want[s] = true
				}
				delete(want, syscall.SIGTERM)
				// glibc hides 32 and 33 from the command's sigwaitinfo.
				delete(want, 32)
				delete(want, 33)
			}
			got, code := scanSignals(t, i, all, want)
			if code != 0 {
				t.Errorf("%s: exit %d, want the command's 0: the init did not survive every signal", i.name, code)
			}
			if missing, extra := diffSets(want, got); len(missing)+len(extra) > 0 {
				t.Errorf("%s: not forwarded: %s; forwarded though not expected: %s", i.name, names(missing), names(extra))
			}
			t.Logf("%s forwarded %d signals: %s", i.name, len(got), names(got))
		})
	}
}

// TestCheckpointAfterSIGTERM: a training job whose SIGTERM handler needs 20 s
// to write its checkpoint. Neither init may kill it: the orchestrator owns
// the deadline. Both run in parallel, so the test takes about 20 s.
func TestCheckpointAfterSIGTERM(t *testing.T) {
	child := `trap 'echo checkpointing; sleep 20; echo saved > "$DIR/checkpoint"; exit 0' TERM
echo ready
while :; do sleep 0.1; done`
	for _, i := range inits() {
		t.Run(i.name, func(t *testing.T) {
			needInit(t, i)
			t.Parallel()
			s := startRun(t, run{init: i.argv()}, "sh", "-c", child)
			if l := s.line(); l != "ready" {
				t.Fatalf("first line %q, want ready", l)
			}
			begin := time.Now()
			_ = syscall.Kill(s.initPID(), syscall.SIGTERM)
			if l := s.line(); l != "checkpointing" {
				t.Fatalf("%q, want checkpointing", l)
			}
			code, _ := s.wait()
			took := time.Since(begin)
			if code != 0 {
				t.Errorf("%s: exit %d after %v, want the command's 0 (stderr: %s)", i.name, code, took, s.stderr.String())
			}
			if b, err := os.ReadFile(s.dir + "/checkpoint"); err != nil || strings.TrimSpace(string(b)) != "saved" {
				t.Errorf("%s: no checkpoint after %v: %v", i.name, took, err)
			}
			if took < 20*time.Second {
				t.Errorf("%s: the command ended %v after SIGTERM, before its 20 s checkpoint", i.name, took)
			}
		})
	}
}

// TestSIGQUITOnlyForwarded: SIGQUIT is the JVM's and faulthandler's "dump
// threads"; the command handles it and runs on. imagectl-init runs with a
// 500ms grace period here, to show SIGQUIT does not start it.
func TestSIGQUITOnlyForwarded(t *testing.T) {
	child := `trap 'echo dumped threads' QUIT
trap 'echo bye; exit 5' TERM
echo ready
while :; do sleep 0.05; done`
	for _, i := range inits() {
		t.Run(i.name, func(t *testing.T) {
			needInit(t, i)
			t.Parallel()
			flags := []string{"--grace-period", "500ms"}
			if i.isTini() {
				flags = nil
			}
			s := startRun(t, run{init: i.argv(flags...)}, "sh", "-c", child)
			if l := s.line(); l != "ready" {
				t.Fatalf("first line %q, want ready", l)
			}
			pid := s.initPID()
			_ = syscall.Kill(pid, syscall.SIGQUIT)
			if l := s.line(); l != "dumped threads" {
				t.Fatalf("%s: after SIGQUIT %q, want dumped threads", i.name, l)
			}
			time.Sleep(1500 * time.Millisecond) // three grace periods
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				t.Fatalf("%s: the init is gone 1.5 s after SIGQUIT: %v", i.name, err)
			}
			code, rest := s.wait()
			if code != 5 || !strings.Contains(rest, "bye") {
				t.Errorf("%s: exit %d, output %q; want the command alive until SIGTERM, then its 5", i.name, code, rest)
			}
		})
	}
}

// TestGracePeriodFlag: --grace-period turns escalation on, overriding the
// config (which says nothing here).
func TestGracePeriodFlag(t *testing.T) {
	s := startRun(t, run{init: []string{initBin, "--grace-period", "500ms", "--"}}, "sh", "-c", `trap '' TERM; echo ready; sleep 30`)
	if l := s.line(); l != "ready" {
		t.Fatalf("first line %q, want ready", l)
	}
	begin := time.Now()
	_ = syscall.Kill(s.initPID(), syscall.SIGTERM)
	code, _ := s.wait()
	if took := time.Since(begin); code != 137 || took < 500*time.Millisecond || took > 5*time.Second {
		t.Errorf("exit %d after %v, want 137 just after the 500ms grace period", code, took)
	}
}

// envLaunchMasked makes the test binary, in TestMain, a careless launcher:
// it blocks SIGUSR1, SIGTTIN, SIGWINCH and SIGTERM, ignores SIGHUP and
// signal 40, and execs its arguments.
const envLaunchMasked = "IMAGECTL_TEST_LAUNCH_MASKED"

// The launcher's mask and ignored set, as /proc/PID/status shows them.
var (
	launcherBlocked = []syscall.Signal{syscall.SIGUSR1, syscall.SIGTTIN, syscall.SIGWINCH, syscall.SIGTERM}
	launcherIgnored = []syscall.Signal{syscall.SIGHUP, 40}
)

func sigHex(sigs []syscall.Signal) string {
	var m uint64
	for _, s := range sigs {
		m |= 1 << (s - 1)
	}
	return fmt.Sprintf("%016x", m)
}

func launchMasked() {
	goruntime.LockOSThread()
	var set unix.Sigset_t
	for _, s := range launcherBlocked {
		set.Val[0] |= 1 << (s - 1)
	}
	// SIG_SETMASK, not SIG_BLOCK: the launcher hands on exactly its own
	// mask, whatever it inherited.
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &set, nil); err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		os.Exit(98)
	}
	type sigaction struct{ handler, flags, restorer, mask uint64 }
	// Signals the launcher itself inherited as ignored (make, for one,
	// starts its children with signal 32 ignored) go back to the default,
	// so that the ignored set handed on is exactly launcherIgnored.
	for s := 1; s <= 64; s++ {
		if s == int(syscall.SIGKILL) || s == int(syscall.SIGSTOP) {
			continue
		}
		var old sigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 || old.handler != 1 {
			continue
		}
		dfl := sigaction{}
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
			fmt.Fprintln(os.Stderr, "launcher:", e)
			os.Exit(98)
		}
	}
	for _, s := range launcherIgnored {
		ign := sigaction{handler: 1}
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), uintptr(unsafe.Pointer(&ign)), 0, 8, 0, 0); e != 0 {
			fmt.Fprintln(os.Stderr, "launcher:", e)
			os.Exit(98)
		}
	}
	// What the launcher hands on, for the test to check it did its part.
	status, _ := os.ReadFile("/proc/thread-self/status")
	var state []string
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "SigBlk:") || strings.HasPrefix(l, "SigIgn:") {
			state = append(state, l)
		}
	}
	_ = os.WriteFile(os.Getenv("DIR")+"/launcher", []byte(strings.Join(state, "\n")+"\n"), 0o644)
	path, err := exec.LookPath(os.Args[1])
	if err == nil {
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, envLaunchMasked+"=") {
				env = append(env, kv)
			}
		}
		err = syscall.Exec(path, os.Args[1:], env)
	}
	fmt.Fprintln(os.Stderr, "launcher:", err)
	os.Exit(98)
}

// TestCommandSignalStateFromMaskedLauncher: a launcher that blocked and
// ignored signals. imagectl-init gives the command a clean slate (nothing
// blocked, nothing ignored) and a forwarded SIGUSR1 arrives; tini gives it
// the launcher's mask and ignored set as they were.
func TestCommandSignalStateFromMaskedLauncher(t *testing.T) {
	// python3, not sh: dash clears its signal mask at start and would hide
	// what it inherited.
	needPython(t)
	child := `
import os, signal, sys, time
for l in open("/proc/self/status"):
    if l.startswith(("SigBlk:", "SigIgn:")):
        print(l.strip("\n"), flush=True)
def usr1(*_):
    os.write(1, b"got USR1\n")
    os._exit(0)
signal.signal(signal.SIGUSR1, usr1)
print("ready", flush=True)
time.sleep(10)
print("no USR1 in 10 s", flush=True)
sys.exit(1)
`
	for _, i := range inits() {
		t.Run(i.name, func(t *testing.T) {
			needInit(t, i)
			t.Parallel()
			s := startRun(t, run{init: i.argv(), masked: true}, "python3", "-c", child)
			blk, ign := s.line(), s.line()
			launcher, _ := os.ReadFile(s.dir + "/launcher")
			// The launcher records what it hands on: the test fails if it
			// did not do its part.
			if !strings.Contains(string(launcher), "SigBlk:\t"+sigHex(launcherBlocked)) || !strings.Contains(string(launcher), "SigIgn:\t"+sigHex(launcherIgnored)) {
				t.Fatalf("the launcher's state did not reach the init: %q, want blocked %s and ignored %s", launcher, sigHex(launcherBlocked), sigHex(launcherIgnored))
			}
			// python3 ignores SIGPIPE and SIGXFSZ itself at start.
			pyIgn := []syscall.Signal{syscall.SIGPIPE, syscall.SIGXFSZ}
			if i.isTini() {
				if blk != "SigBlk:\t"+sigHex(launcherBlocked) || ign != "SigIgn:\t"+sigHex(append(pyIgn, launcherIgnored...)) {
					t.Errorf("tini's command: %q %q, want the launcher's copy (blocked %s, ignored %s)", blk, ign, sigHex(launcherBlocked), sigHex(launcherIgnored))
				}
				return
			}
			if blk != "SigBlk:\t"+sigHex(nil) || ign != "SigIgn:\t"+sigHex(pyIgn) {
				t.Errorf("imagectl-init's command starts with %q %q, want nothing blocked or ignored", blk, ign)
			}
			if l := s.line(); l != "ready" {
				t.Fatalf("%q, want ready", l)
			}
			_ = syscall.Kill(s.initPID(), syscall.SIGUSR1)
			code, rest := s.wait()
			if code != 0 || !strings.Contains(rest, "got USR1") {
				t.Errorf("exit %d, output %q: the forwarded SIGUSR1 did not arrive (stderr: %s)", code, rest, s.stderr.String())
			}
		})
	}
}

// runDirect runs an init (not in namespaces: not PID 1) with env and waits
// for it, up to 60 s.
func runDirect(t *testing.T, env []string, argv ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	cfg := dir + "/runtime.json"
	if err := os.WriteFile(cfg, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "IMAGECTL_RUNTIME_CONFIG=" + cfg, "DIR=" + dir}, env...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

// runPID1 runs argv (an init, its flags and the command) as PID 1 in new
// namespaces and waits for it.
func runPID1(t *testing.T, argv ...string) (code int, stdout, stderr string) {
	t.Helper()
	s := startRun(t, run{init: argv})
	code, stdout = s.wait()
	return code, stdout, s.stderr.String()
}

// TestTiniFlags runs each of tini's flags against both inits, as PID 1 in
// new namespaces except where the flag is about not being PID 1 (-s, -p).
func TestTiniFlags(t *testing.T) {
	for _, i := range inits() {
		t.Run(i.name, func(t *testing.T) {
			needInit(t, i)
			t.Parallel()
			bin := i.bin

			t.Run("-e remaps a code to 0", func(t *testing.T) {
				for _, tc := range []struct {
					flags []string
					sh    string
					want  int
				}{
					{[]string{"-e", "3"}, "exit 3", 0},
					{[]string{"-e", "3"}, "exit 4", 4},
					{[]string{"-e", "3", "-e", "4"}, "exit 4", 0},
					{[]string{"-e", "143"}, "kill -TERM $$", 0},
					{nil, "kill -TERM $$", 143},
				} {
					if code, _, stderr := runPID1(t, append(append([]string{bin}, tc.flags...), "--", "sh", "-c", tc.sh)...); code != tc.want {
						t.Errorf("%s %v -- sh -c %q: exit %d, want %d (%s)", i.name, tc.flags, tc.sh, code, tc.want, stderr)
					}
				}
			})

			t.Run("-s and TINI_SUBREAPER reap orphans when not PID 1", func(t *testing.T) {
				orphan := `(sleep 0.3 & echo $! > "$DIR/orphan"); sleep 0.1; cut -d' ' -f4 /proc/$(cat "$DIR/orphan")/stat`
				for _, tc := range []struct {
					env   []string
					flags []string
				}{{nil, []string{"-s"}}, {[]string{"TINI_SUBREAPER="}, nil}} {
					cmd := exec.Command(bin, append(tc.flags, "--", "sh", "-c", orphan)...)
					dir := t.TempDir()
					cmd.Env = append([]string{"PATH=/usr/bin:/bin", "DIR=" + dir, "IMAGECTL_RUNTIME_CONFIG=" + filepath.Join(dir, "none.json")}, tc.env...)
					_ = os.WriteFile(filepath.Join(dir, "none.json"), []byte("{}"), 0o644)
					out, err := cmd.Output()
					if err != nil {
						t.Fatalf("%s %v: %v", i.name, tc.flags, err)
					}
					if got := strings.TrimSpace(string(out)); got != strconv.Itoa(cmd.Process.Pid) {
						t.Errorf("%s %v %v: the orphan's parent is %s, want the init (%d)", i.name, tc.flags, tc.env, got, cmd.Process.Pid)
					}
				}
			})

			t.Run("-g and TINI_KILL_PROCESS_GROUP signal the process group", func(t *testing.T) {
				// The command and a grandchild in its process group both
				// report SIGUSR1; without -g only the command gets it.
				child := `sh -c 'trap "echo grandchild >> \"$DIR/got\"; exit 0" USR1; echo x > "$DIR/gc-ready"; while :; do sleep 0.05; done' &
while [ ! -e "$DIR/gc-ready" ]; do sleep 0.02; done
trap 'echo child >> "$DIR/got"; sleep 1; exit 0' USR1
echo x > "$DIR/ready"
while :; do sleep 0.05; done`
				for _, tc := range []struct {
					name  string
					env   []string
					flags []string
					want  string
				}{
					{"-g", nil, []string{"-g"}, "child grandchild"},
					{"TINI_KILL_PROCESS_GROUP", []string{"TINI_KILL_PROCESS_GROUP=1"}, nil, "child grandchild"},
					{"neither", nil, nil, "child"},
				} {
					s := startRun(t, run{init: append(append([]string{bin}, tc.flags...), "--"), env: tc.env}, "sh", "-c", child)
					for n := 0; n < 500; n++ {
						if _, err := os.Stat(filepath.Join(s.dir, "ready")); err == nil {
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
					_ = syscall.Kill(s.initPID(), syscall.SIGUSR1)
					s.wait()
					b, _ := os.ReadFile(filepath.Join(s.dir, "got"))
					got := strings.Fields(string(b))
					sort.Strings(got)
					if strings.Join(got, " ") != tc.want {
						t.Errorf("%s %s: SIGUSR1 reached %q, want %q", i.name, tc.name, got, tc.want)
					}
				}
			})

			t.Run("-p sends a signal when the parent dies", func(t *testing.T) {
				dir := t.TempDir()
				_ = os.WriteFile(filepath.Join(dir, "none.json"), []byte("{}"), 0o644)
				// The init's parent is this sh; it exits once the command has
				// its trap set (the init set its parent-death signal before it
				// started the command), at most 5 s later.
				child := `trap 'echo got USR1 > "$DIR/got"; exit 0' USR1; touch "$DIR/ready"; while :; do sleep 0.05; done`
				parent := `"$@" & i=0; while [ ! -e "$DIR/ready" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done`
				cmd := exec.Command("sh", "-c", parent, "sh", bin, "-s", "-p", "SIGUSR1", "--", "sh", "-c", child)
				cmd.Env = []string{"PATH=/usr/bin:/bin", "DIR=" + dir, "IMAGECTL_RUNTIME_CONFIG=" + filepath.Join(dir, "none.json")}
				if err := cmd.Run(); err != nil {
					t.Fatal(err)
				}
				var b []byte
				for n := 0; n < 500 && len(b) == 0; n++ {
					time.Sleep(10 * time.Millisecond)
					b, _ = os.ReadFile(filepath.Join(dir, "got"))
				}
				if strings.TrimSpace(string(b)) != "got USR1" {
					t.Errorf("%s -p SIGUSR1: the command did not get SIGUSR1 when the init's parent died", i.name)
				}
			})

			t.Run("-v logs what the init does", func(t *testing.T) {
				code, stdout, stderr := runPID1(t, bin, "-v", "--", "true")
				want := "imagectl-init: started pid="
				out := stderr
				if i.isTini() {
					want, out = "Spawned child process 'true'", stdout+stderr
				}
				if code != 0 || !strings.Contains(out, want) {
					t.Errorf("%s -v: exit %d, output %q, want %q", i.name, code, out, want)
				}
			})

			t.Run("-w warns about reaped zombies", func(t *testing.T) {
				code, stdout, stderr := runPID1(t, bin, "-w", "--", "sh", "-c", `(sleep 0.1 &); sleep 1`)
				want := "reaped zombie process pid="
				if i.isTini() {
					want = "Reaped zombie process with pid="
				}
				if code != 0 || !strings.Contains(stdout+stderr, want) {
					t.Errorf("%s -w: exit %d, output %q, want %q", i.name, code, stdout+stderr, want)
				}
			})

			t.Run("--version and -h", func(t *testing.T) {
				code, stdout, _ := runDirect(t, nil, bin, "--version")
				want := "imagectl-init version "
				if i.isTini() {
					want = "tini version 0.19"
				}
				if code != 0 || !strings.HasPrefix(stdout, want) {
					t.Errorf("%s --version: exit %d, %q, want %q", i.name, code, stdout, want)
				}
				if code, stdout, _ := runDirect(t, nil, bin, "-h"); code != 0 || !strings.Contains(stdout, "-e EXIT_CODE") && !strings.Contains(stdout, "-e CODE") {
					t.Errorf("%s -h: exit %d, %q", i.name, code, stdout)
				}
			})

			t.Run("-- and flags ending at the command", func(t *testing.T) {
				if code, _, _ := runPID1(t, bin, "--", "sh", "-c", "exit 5"); code != 5 {
					t.Errorf("%s -- sh -c 'exit 5': exit %d, want 5", i.name, code)
				}
				// tini's getopt permutes: without --, the command's own -c is
				// taken for a tini flag. imagectl-init stops at the command.
				code, _, _ := runPID1(t, bin, "sh", "-c", "exit 5")
				want := 5
				if i.isTini() {
					want = 1
				}
				if code != want {
					t.Errorf("%s sh -c 'exit 5': exit %d, want %d", i.name, code, want)
				}
			})

			t.Run("an unknown flag is a usage error, never a command", func(t *testing.T) {
				for _, flag := range []string{"-x", "--bogus"} {
					code, stdout, stderr := runPID1(t, bin, flag, "--", "sh", "-c", "echo ran")
					want := 2
					if i.isTini() {
						want = 1 // tini: usage, exit 1
					}
					if code != want || strings.Contains(stdout, "ran") {
						t.Errorf("%s %s: exit %d, stdout %q; want %d and the command not run", i.name, flag, code, stdout, want)
					}
					if !i.isTini() && (!strings.Contains(stderr, "unknown flag") || !strings.Contains(stderr, "usage:")) {
						t.Errorf("%s %s: stderr %q, want the unknown flag named and the usage", i.name, flag, stderr)
					}
				}
			})
		})
	}
}

// TestStrayFaultSignalsNotPID1: under another init (`-s`, not PID 1) the
// kernel does not protect the init from signals it has no handler for.
// imagectl-init catches a SIGSEGV sent by kill and forwards it; tini, which
// leaves it at its default, is killed by it (and its command is orphaned).
func TestStrayFaultSignalsNotPID1(t *testing.T) {
	needPython(t)
	for _, i := range inits() {
		t.Run(i.name, func(t *testing.T) {
			needInit(t, i)
			t.Parallel()
			cmd := exec.Command(i.bin, "-s", "--", "python3", "-c", sigChild)
			dir := t.TempDir()
			_ = os.WriteFile(filepath.Join(dir, "none.json"), []byte("{}"), 0o644)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "IMAGECTL_RUNTIME_CONFIG=" + filepath.Join(dir, "none.json")}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			if !sc.Scan() || sc.Text() != "ready" {
				_ = cmd.Process.Kill()
				t.Fatalf("%s: no ready line", i.name)
			}
			// The command's pid, to end it even after its init is gone.
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
			defer func() {
				for _, f := range strings.Fields(string(b)) {
					if n, err := strconv.Atoi(f); err == nil {
						_ = syscall.Kill(n, syscall.SIGKILL)
					}
				}
				_ = cmd.Process.Kill()
			}()
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGSEGV)
			if i.isTini() {
				err := cmd.Wait()
				ee, ok := err.(*exec.ExitError)
				if !ok || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSEGV {
					t.Errorf("tini -s after kill -SEGV: %v, want it killed by SIGSEGV (the reference's behaviour)", err)
				}
				return
			}
			if !sc.Scan() || sc.Text() != fmt.Sprintf("got %d %d", syscall.SIGSEGV, cmd.Process.Pid) {
				t.Fatalf("after kill -SEGV: %q, want the command to get SIGSEGV from the init", sc.Text())
			}
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
			for sc.Scan() {
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("imagectl-init -s after kill -SEGV then SIGTERM: %v, want the command's 0", err)
			}
		})
	}
}

// TestClosedStderr: a log reader that goes away must not take the init
// down: with stderr a closed pipe, the init's own warning raises SIGPIPE,
// and the command still runs to its exit code.
func TestClosedStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "runtime.json")
	// A cache directory that cannot be made: one warning, written to the
	// closed stderr before the command starts.
	if err := os.WriteFile(cfg, []byte(`{"caches": {"triton": "/proc/no/such/dir"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(initBin, "--", "sh", "-c", "echo ran > \"$0/ran\"; exit 3", dir)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "IMAGECTL_RUNTIME_CONFIG=" + cfg}
	cmd.Stderr = w
	err = cmd.Run()
	w.Close()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("with stderr closed: %v, want the command's exit 3", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("the command did not run: %v", err)
	}
}
