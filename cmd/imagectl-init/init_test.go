package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"imagectl/internal/runtime"
)

// These tests run the built init as a real PID 1 in fresh PID and mount
// namespaces (unshare --pid --fork --mount-proc --mount), so mounts they make
// never reach the host. They need root and unshare; without them they skip.

var initBin string

func TestMain(m *testing.M) {
	if os.Getenv(envLaunchMasked) != "" {
		launchMasked()
	}
	dir, err := os.MkdirTemp("", "imagectl-init-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	initBin = filepath.Join(dir, "imagectl-init")
	build := exec.Command("go", "build", "-trimpath", "-o", initBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building imagectl-init:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func requireNamespaces(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for PID and mount namespaces")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--mount", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot create namespaces here: %v: %s", err, out)
	}
}

func TestStaticBinary(t *testing.T) {
	f, err := elf.Open(initBin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: it is not static", initBin)
		}
	}
}

// sandbox is one run of the init inside new namespaces.
type sandbox struct {
	t      *testing.T
	dir    string
	exe    string // the init binary, to find its PID
	cmd    *exec.Cmd
	stdout *bufio.Reader
	stderr syncBuffer
}

// syncBuffer is the sandbox's stderr: written by exec's copier, read by
// the test while the init runs (waitStderr).
type syncBuffer struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{} // closed and replaced on each write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// next returns the text so far and a channel closed at the next write.
func (b *syncBuffer) next() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.b.String(), b.changed
}

// waitStderr blocks until the init has written want to stderr: the test
// acts on what the init says it is doing, not on a guess of how long it
// takes to get there.
func (s *sandbox) waitStderr(want string) {
	s.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		text, changed := s.stderr.next()
		if strings.Contains(text, want) {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			s.killProcs()
			s.t.Fatalf("the init never wrote %q to stderr in 60 s (stderr: %s)", want, text)
		}
	}
}

// start runs setup (shell, as PID 1 before the init) and then execs the init
// with the config cfg (nil: no config) and the command argv. $DIR is a fresh
// directory; $INIT the binary.
func start(t *testing.T, cfg map[string]any, setup string, argv ...string) *sandbox {
	t.Helper()
	return startRun(t, run{cfg: cfg, setup: setup}, argv...)
}

// run says how startRun starts an init.
type run struct {
	// init is the init and its flags, put before the command; nil runs
	// imagectl-init with "--" (and setup may exec "$INIT" -- "$@" itself).
	init []string
	// cfg is imagectl-init's runtime config; nil: none.
	cfg map[string]any
	// setup runs in the new namespaces before the init.
	setup string
	// env is added to the environment.
	env []string
	// masked starts the init (given in init) through launchMasked: signals
	// blocked and ignored, as a careless launcher leaves them.
	masked bool
}

func startRun(t *testing.T, r run, argv ...string) *sandbox {
	t.Helper()
	requireNamespaces(t)
	s := &sandbox{t: t, dir: t.TempDir(), exe: initBin}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "DIR=" + s.dir, "INIT=" + initBin}
	if r.cfg != nil {
		b, _ := json.Marshal(r.cfg)
		path := filepath.Join(s.dir, "runtime.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		env = append(env, "IMAGECTL_RUNTIME_CONFIG="+path)
	} else {
		env = append(env, "IMAGECTL_RUNTIME_CONFIG="+filepath.Join(s.dir, "none.json"))
		if err := os.WriteFile(filepath.Join(s.dir, "none.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env = append(env, r.env...)
	script := "set -e\n" + r.setup + "\nexec \"$INIT\" -- \"$@\"\n"
	if r.init != nil {
		script = "set -e\n" + r.setup + "\nexec \"$@\"\n"
		argv = append(append([]string(nil), r.init...), argv...)
		exe, err := exec.LookPath(r.init[0])
		if err != nil {
			t.Fatal(err)
		}
		s.exe, _ = filepath.EvalSymlinks(exe)
	}
	if r.masked {
		// The launcher runs as PID 1 and execs the init in its place.
		script = strings.Replace(script, `exec "$@"`, `exec env `+envLaunchMasked+`=1 "$TESTBIN" "$@"`, 1)
		env = append(env, "TESTBIN="+os.Args[0])
	}
	s.cmd = exec.Command("unshare", append([]string{"--pid", "--fork", "--mount-proc", "--mount", "--propagation", "private", "sh", "-c", script, "sh"}, argv...)...)
	s.cmd.Env = env
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.stdout = bufio.NewReader(out)
	s.cmd.Stderr = &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	return s
}

// kill ends a sandbox still running and waits for it.
func (s *sandbox) kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.killProcs()
	_ = s.cmd.Wait()
}

// killProcs sends SIGKILL to the namespace's PID 1 (which takes every
// process in the namespace with it), then to unshare.
func (s *sandbox) killProcs() {
	pid := s.cmd.Process.Pid
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
	_ = s.cmd.Process.Kill()
}

// line reads one line of the command's stdout.
func (s *sandbox) line() string {
	s.t.Helper()
	timer := time.AfterFunc(60*time.Second, func() {
		s.t.Errorf("no line from the command in 60 s; killed the sandbox")
		s.killProcs()
	})
	defer timer.Stop()
	l, err := s.stdout.ReadString('\n')
	if err != nil {
		s.t.Fatalf("reading the command's output: %v (stderr: %s)", err, s.stderr.String())
	}
	return strings.TrimSpace(l)
}

// wait returns the exit code of the whole sandbox (the init's, since
// unshare --fork passes its child's code through), the rest of stdout, and
// how long it ran since start.
func (s *sandbox) wait() (int, string) {
	s.t.Helper()
	// No scenario takes a minute: a hung one fails instead of stalling the
	// test binary until its timeout.
	timer := time.AfterFunc(90*time.Second, func() {
		s.t.Errorf("the sandbox still ran after 90 s; killed it")
		s.killProcs()
	})
	defer timer.Stop()
	rest, _ := io.ReadAll(s.stdout)
	err := s.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(rest)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return 0, string(rest)
}

// initPID finds the host PID of the init: unshare's only child, once it has
// exec'd the init binary.
func (s *sandbox) initPID() int {
	s.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", s.cmd.Process.Pid, s.cmd.Process.Pid))
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == s.exe {
				return pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.t.Fatalf("the init never started (stderr: %s)", s.stderr.String())
	return 0
}

func TestSignalsReachTheCommand(t *testing.T) {
	child := `for s in HUP USR1 USR2 WINCH QUIT INT; do trap "echo got $s" $s; done
trap 'echo got TERM; exit 7' TERM
echo ready
while :; do sleep 0.05; done`
	s := start(t, nil, "", "sh", "-c", child)
	if l := s.line(); l != "ready" {
		t.Fatalf("first line %q, want ready", l)
	}
	pid := s.initPID()
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH} {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatal(err)
		}
		if got, want := s.line(), "got "+strings.TrimPrefix(sigName(sig), "SIG"); got != want {
			t.Errorf("after %v: %q, want %q", sig, got, want)
		}
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, rest := s.wait()
	if !strings.Contains(rest, "got TERM") {
		t.Errorf("the command did not see SIGTERM; output %q", rest)
	}
	if code != 7 {
		t.Errorf("exit code %d, want the command's 7 (stderr: %s)", code, s.stderr.String())
	}
}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGHUP: "HUP", syscall.SIGUSR1: "USR1", syscall.SIGUSR2: "USR2", syscall.SIGWINCH: "WINCH"}[s]
}

func TestCommandGetsDefaultSignalDispositions(t *testing.T) {
	// The init catches SIGPIPE, SIGTTIN and SIGTTOU for itself; the command
	// must still get them at their defaults (not ignored, not blocked). And
	// what the init's launcher ignored is reset too: here signal 32, which
	// neither Go nor the shell touch, so only the init can reset it (a CI
	// harness was seen passing it down ignored).
	restore := ignoreRaw(t, 32)
	defer restore()
	s := start(t, nil, "", "grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status")
	code, out := s.wait()
	if code != 0 {
		t.Fatalf("exit %d (stderr: %s)", code, s.stderr.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 || strings.Trim(f[1], "0") != "" {
			t.Errorf("the command starts with %q, want no ignored or blocked signals", l)
		}
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		sh   string
		want int
	}{
		{"ok", "exit 0", 0},
		{"code", "exit 3", 3},
		{"killed", "kill -KILL $$", 128 + 9},
		{"terminated", "kill -TERM $$", 128 + 15},
		{"segv", "kill -SEGV $$", 128 + 11},
		{"not found", "exec /nonexistent/command", 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, nil, "", "sh", "-c", tc.sh)
			if code, _ := s.wait(); code != tc.want {
				t.Errorf("sh -c %q under the init: exit %d, want %d (stderr: %s)", tc.sh, code, tc.want, s.stderr.String())
			}
		})
	}
	s := start(t, nil, "", "/no/such/binary")
	if code, _ := s.wait(); code != 127 {
		t.Errorf("missing command: exit %d, want 127", code)
	}
}

func TestReapsOrphans(t *testing.T) {
	// 100 grandchildren orphaned at once (their parents exit immediately),
	// so they are reparented to the init; then they are killed and must all
	// be reaped. Polls, not sleeps, with a generous bound (30 s of sleeps),
	// until none of the orphans is left, dying or a zombie (a count of zombies
	// alone could read 0 before the killed sleeps had died):
	// on a 2-core machine under load the shell's own /proc scans are slow.
	child := `i=0; while [ $i -lt 100 ]; do (sleep 1000 &); i=$((i+1)); done
pids() { awk '$4==1 && $2=="(sleep)" {print $1}' /proc/[0-9]*/stat 2>/dev/null; }
t=0; while [ $(pids | wc -l) -lt 100 ] && [ $t -lt 200 ]; do sleep 0.05; t=$((t+1)); done
echo orphans $(pids | wc -l)
kill $(pids)
zombies() { awk '$3=="Z"' /proc/[0-9]*/stat 2>/dev/null | wc -l; }
t=0; while [ $(pids | wc -l) -gt 0 ] && [ $t -lt 600 ]; do sleep 0.05; t=$((t+1)); done
echo zombies $(zombies)`
	s := start(t, nil, "", "sh", "-c", child)
	if l := s.line(); l != "orphans 100" {
		t.Fatalf("%q, want %q: the orphans were not reparented to the init", l, "orphans 100")
	}
	if l := s.line(); l != "zombies 0" {
		t.Errorf("%q, want %q: the init did not reap every orphan", l, "zombies 0")
	}
	if code, _ := s.wait(); code != 0 {
		t.Errorf("exit %d, want 0 (stderr: %s)", code, s.stderr.String())
	}
}

func TestSubreaperWhenNotPID1(t *testing.T) {
	// No namespaces: the init is an ordinary process, so orphans reach it only
	// because it made itself a child subreaper.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "runtime.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The orphan lives until the file go exists (no timer to race on a
	// loaded machine): its parent, a subshell, has exited by the time sh
	// reads its parent pid; then it ends and has up to 5 s to be reaped.
	script := `(sh -c 'while [ ! -e "$0/go" ]; do sleep 0.01; done' "$0" & echo $! > "$0/orphan")
o=$(cat "$0/orphan"); cut -d' ' -f4 /proc/$o/stat; touch "$0/go"
i=0; while [ -e /proc/$o ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
if [ -e /proc/$o ]; then echo left; else echo reaped; fi`
	cmd := exec.Command(initBin, "--", "sh", "-c", script, dir)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "IMAGECTL_RUNTIME_CONFIG=" + filepath.Join(dir, "runtime.json")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || f[0] != strconv.Itoa(cmd.Process.Pid) || f[1] != "reaped" {
		t.Errorf("orphan's parent and fate %q, want [%d reaped]", f, cmd.Process.Pid)
	}
}

func TestGracePeriodThenKill(t *testing.T) {
	cfg := map[string]any{"grace_period": "500ms"}
	s := start(t, cfg, "", "sh", "-c", `trap '' TERM; echo ready; sleep 30`)
	if l := s.line(); l != "ready" {
		t.Fatalf("first line %q, want ready", l)
	}
	pid := s.initPID()
	begin := time.Now()
	_ = syscall.Kill(pid, syscall.SIGTERM)
	code, _ := s.wait()
	took := time.Since(begin)
	if code != 137 {
		t.Errorf("exit %d, want 137 (killed after the grace period)", code)
	}
	if took < 500*time.Millisecond || took > 3*time.Second {
		t.Errorf("the command was killed %v after SIGTERM, want just over the 500ms grace period", took)
	}
	if !strings.Contains(s.stderr.String(), "grace period") {
		t.Errorf("no grace-period warning in stderr %q", s.stderr.String())
	}
}

func TestStorageAppearsLater(t *testing.T) {
	cfg := map[string]any{
		"storage": map[string]any{"path": "STORAGE", "ready_file": "STORAGE/.ready", "timeout": "10s", "required": true},
		"tmpdir":  "STORAGE/tmp",
		"caches":  map[string]any{"inductor": "STORAGE/cache/inductor", "triton": "STORAGE/cache/triton"},
	}
	// The storage is mounted once the test creates $DIR/go, which it does
	// when the init says it is waiting for it.
	setup := `export ` + runtime.EnvDebug + `=1
mkdir -p "$DIR/storage"
(while [ ! -e "$DIR/go" ]; do sleep 0.01; done; mount -t tmpfs -o size=16m storage "$DIR/storage"; touch "$DIR/storage/.ready") &
umask 077`
	child := `echo started
for v in TMPDIR TORCHINDUCTOR_CACHE_DIR TRITON_CACHE_DIR; do eval p=\$$v; echo "$v $p $(stat -c %a "$p") $(stat -f -c %T "$p")"; done`
	s := startWithStorage(t, cfg, setup, child)
	s.waitStderr("waiting for storage")
	if err := os.WriteFile(filepath.Join(s.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if l := s.line(); l != "started" {
		t.Fatalf("first line %q, want started", l)
	}
	for _, v := range []string{"TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"} {
		f := strings.Fields(s.line())
		if len(f) != 4 || f[0] != v || !strings.HasPrefix(f[1], filepath.Join(s.dir, "storage")+"/") || f[2] != "775" || f[3] != "tmpfs" {
			t.Errorf("%s: %v, want a 775 directory on the storage tmpfs", v, f)
		}
	}
	if code, _ := s.wait(); code != 0 {
		t.Errorf("exit %d, want 0 (stderr: %s)", code, s.stderr.String())
	}
}

// startWithStorage replaces STORAGE in the config with $DIR/storage.
func startWithStorage(t *testing.T, cfg map[string]any, setup, child string) *sandbox {
	t.Helper()
	b, _ := json.Marshal(cfg)
	dir := t.TempDir()
	b = []byte(strings.ReplaceAll(string(b), "STORAGE", filepath.Join(dir, "storage")))
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	setup = strings.ReplaceAll(setup, `$DIR`, dir)
	s := start(t, c, setup, "sh", "-c", strings.ReplaceAll(child, `$DIR`, dir))
	s.dir = dir
	return s
}

func TestStorageNeverAppears(t *testing.T) {
	cfg := map[string]any{"storage": map[string]any{"path": "STORAGE", "timeout": "1s", "required": true}}
	begin := time.Now()
	s := startWithStorage(t, cfg, "", "echo started")
	code, out := s.wait()
	took := time.Since(begin)
	if code != 75 {
		t.Errorf("exit %d, want 75", code)
	}
	if strings.Contains(out, "started") {
		t.Errorf("the command ran although required storage never came")
	}
	if took > 4*time.Second {
		t.Errorf("gave up after %v, want about the 1s timeout", took)
	}
	msg := strings.TrimSpace(s.stderr.String())
	if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, filepath.Join(s.dir, "storage")) || !strings.Contains(msg, "1s") {
		t.Errorf("stderr %q, want one line naming the path and the 1s timeout", msg)
	}
}

func TestSignalDuringStorageWait(t *testing.T) {
	cfg := map[string]any{"storage": map[string]any{"path": "STORAGE", "timeout": "30s", "required": true}}
	s := startWithStorage(t, cfg, "export "+runtime.EnvDebug+"=1", "echo started")
	pid := s.initPID()
	s.waitStderr("waiting for storage")
	_ = syscall.Kill(pid, syscall.SIGTERM)
	code, out := s.wait()
	// 143, not 75: the signal ended the 30 s wait, not its timeout.
	if code != 128+15 || strings.Contains(out, "started") {
		t.Errorf("exit %d, output %q; want 143 and the command never started", code, out)
	}
}

func TestBadOverrideIsUsageError(t *testing.T) {
	s := start(t, map[string]any{}, "export IMAGECTL_STORAGE_TIMEOUT=soon", "echo started")
	code, out := s.wait()
	if code != 2 || strings.Contains(out, "started") || !strings.Contains(s.stderr.String(), "IMAGECTL_STORAGE_TIMEOUT") {
		t.Errorf("exit %d, output %q, stderr %q; want 2 naming the variable", code, out, s.stderr.String())
	}
}

func TestSmallShmEnlarged(t *testing.T) {
	cfg := map[string]any{"shm_path": "STORAGE", "min_shm_bytes": 64 << 20}
	setup := `mkdir -p "$DIR/storage"; mount -t tmpfs -o size=1m,nosuid,nodev shm "$DIR/storage"`
	s := startWithStorage(t, cfg, setup, `stat -f -c '%b %S' "$DIR/storage"`)
	code, out := s.wait()
	f := strings.Fields(out)
	if code != 0 || len(f) != 2 {
		t.Fatalf("exit %d, output %q (stderr: %s)", code, out, s.stderr.String())
	}
	blocks, _ := strconv.ParseInt(f[0], 10, 64)
	bsize, _ := strconv.ParseInt(f[1], 10, 64)
	if blocks*bsize < 64<<20 {
		t.Errorf("shm is %d bytes after the init, want >= 64M", blocks*bsize)
	}
	if strings.Contains(s.stderr.String(), "warning") || !strings.Contains(s.stderr.String(), "(enlarged)") {
		t.Errorf("stderr %q, want the summary saying enlarged and no warning", s.stderr.String())
	}
}

func TestSmallShmAdviceWithoutCapability(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux) to drop CAP_SYS_ADMIN")
	}
	cfg := map[string]any{"shm_path": "STORAGE", "min_shm_bytes": 1 << 30}
	// 64M, the container runtimes' default; then run the init without
	// CAP_SYS_ADMIN, like an unprivileged container.
	setup := `mkdir -p "$DIR/storage"; mount -t tmpfs -o size=64m shm "$DIR/storage"
exec setpriv --bounding-set -sys_admin --inh-caps -sys_admin "$INIT" -- "$@"`
	s := startWithStorage(t, cfg, setup, `echo ran; stat -f -c '%b %S' "$DIR/storage"`)
	code, out := s.wait()
	if code != 0 || !strings.HasPrefix(out, "ran") {
		t.Fatalf("exit %d, output %q: the command must still run (stderr: %s)", code, out, s.stderr.String())
	}
	f := strings.Fields(strings.TrimPrefix(out, "ran"))
	blocks, _ := strconv.ParseInt(f[0], 10, 64)
	bsize, _ := strconv.ParseInt(f[1], 10, 64)
	if blocks*bsize != 64<<20 {
		t.Errorf("shm is %d bytes, want the 64M it had (no capability to resize)", blocks*bsize)
	}
	stderr := s.stderr.String()
	for _, want := range []string{"64M (the container runtime's default)", "--shm-size=1g", "--ipc=host", "medium: Memory", "sizeLimit: 1Gi"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("advice %q does not contain %q", stderr, want)
		}
	}
	if n := strings.Count(stderr, "warning:"); n != 1 {
		t.Errorf("%d warnings, want 1: %q", n, stderr)
	}
}

func TestReadOnlyProcSys(t *testing.T) {
	have, err := os.ReadFile("/proc/sys/vm/swappiness")
	if err != nil {
		t.Skip("no /proc/sys/vm/swappiness")
	}
	want := 1
	if strings.TrimSpace(string(have)) == "1" {
		want = 2
	}
	cfg := map[string]any{"swappiness": want}
	// /proc/sys read-only in the sandbox, checked before the init runs: the
	// setting is host-wide and this test must never change it.
	setup := `mount --bind /proc/sys /proc/sys; mount -o remount,bind,ro /proc/sys
grep -q ' /proc/sys ro' /proc/self/mountinfo || { echo "could not make /proc/sys read-only" >&2; exit 99; }`
	s := start(t, cfg, setup, "sh", "-c", "echo ran")
	code, out := s.wait()
	if code == 99 {
		t.Fatalf("setup failed: %s", s.stderr.String())
	}
	after, _ := os.ReadFile("/proc/sys/vm/swappiness")
	if string(after) != string(have) {
		t.Fatalf("host vm.swappiness changed from %q to %q", have, after)
	}
	if code != 0 || strings.TrimSpace(out) != "ran" {
		t.Errorf("exit %d, output %q: the command must still run", code, out)
	}
	stderr := s.stderr.String()
	if n := strings.Count(stderr, "warning:"); n != 1 || !strings.Contains(stderr, "read-only") || !strings.Contains(stderr, "host-wide") {
		t.Errorf("stderr %q, want one warning saying read-only and host-wide", stderr)
	}
}

func TestSwappinessWritten(t *testing.T) {
	have, _ := os.ReadFile("/proc/sys/vm/swappiness")
	cfg := map[string]any{"swappiness": 10}
	// A plain file bind-mounted over the sysctl inside the sandbox: the init
	// writes through the real path, the host's value is never touched.
	setup := `echo 60 > "$DIR/swappiness"; mount --bind "$DIR/swappiness" /proc/sys/vm/swappiness
grep -q ' /proc/sys/vm/swappiness ' /proc/self/mountinfo || { echo "bind failed" >&2; exit 99; }`
	s := start(t, cfg, setup, "cat", "/proc/sys/vm/swappiness")
	code, out := s.wait()
	if code == 99 {
		t.Fatalf("setup failed: %s", s.stderr.String())
	}
	if after, _ := os.ReadFile("/proc/sys/vm/swappiness"); string(after) != string(have) {
		t.Fatalf("host vm.swappiness changed from %q to %q", have, after)
	}
	if code != 0 || strings.TrimSpace(out) != "10" {
		t.Errorf("exit %d, swappiness seen by the command %q; want 0 and 10", code, out)
	}
	if !strings.Contains(s.stderr.String(), "swappiness 60->10 (host-wide)") {
		t.Errorf("summary %q does not say swappiness 60->10 (host-wide)", s.stderr.String())
	}
}

func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "runtime.json")
	b, _ := json.Marshal(map[string]any{"storage": map[string]any{"path": filepath.Join(dir, "storage")}})
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(initBin, "doctor", "-o", "json")
	cmd.Env = []string{"IMAGECTL_RUNTIME_CONFIG=" + cfgPath}
	out, err := cmd.Output()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 1 {
		t.Fatalf("imagectl-init doctor: %v, want exit 1 (storage not mounted)", err)
	}
	var r struct {
		Checks []struct{ Name, Status, Found, Fix string }
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("doctor -o json: %v: %s", err, out)
	}
	found := false
	for _, c := range r.Checks {
		if c.Name == "storage" {
			found = true
			if c.Status != "fail" || !strings.Contains(c.Found, "not a mount point") || c.Fix == "" {
				t.Errorf("storage check = %+v, want fail: not a mount point, with a fix", c)
			}
		}
	}
	if !found {
		t.Errorf("no storage check in %s", out)
	}
}

func TestDriverBelowFloorFails(t *testing.T) {
	cfg := map[string]any{"driver_floor": "525.60.13", "driver_policy": "fail", "image": map[string]any{"cuda": "12.4"}}
	setup := `mount -t tmpfs fake /proc/driver; mkdir -p /proc/driver/nvidia/gpus/0000:19:00.0
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.239.06  Wed Nov 30 06:39:21 UTC 2022" > /proc/driver/nvidia/version
printf 'Model: \t\t Tesla T4\nBus Location: \t 0000:19:00.0\nDevice Minor: \t 0\n' > /proc/driver/nvidia/gpus/0000:19:00.0/information`
	s := start(t, cfg, setup, "sh", "-c", "echo ran")
	code, out := s.wait()
	if code != 8 || strings.Contains(out, "ran") {
		t.Errorf("exit %d, output %q; want 8 and the command not run", code, out)
	}
	stderr := s.stderr.String()
	for _, want := range []string{"470.239.06", "525.60.13", "upgrade"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not name %q", stderr, want)
		}
	}
}

func TestFingerprintBeforeCommand(t *testing.T) {
	cfg := map[string]any{"fingerprint_path": "STORAGE/fp/fingerprint.json", "image": map[string]any{"cuda": "12.4", "torch": "2.6.0"}}
	s := startWithStorage(t, cfg, "export IMAGECTL_IMAGE_DIGEST=sha256:abc", `cat "$DIR/storage/fp/fingerprint.json"`)
	code, out := s.wait()
	if code != 0 {
		t.Fatalf("exit %d: the fingerprint was not there when the command started (stderr: %s)", code, s.stderr.String())
	}
	var fp struct {
		ImageDigest string `json:"image_digest"`
		Image       struct{ CUDA, Torch string }
		Shm         struct{ Bytes int64 }
	}
	if err := json.Unmarshal([]byte(out), &fp); err != nil {
		t.Fatalf("fingerprint %q: %v", out, err)
	}
	if fp.ImageDigest != "sha256:abc" || fp.Image.CUDA != "12.4" || fp.Image.Torch != "2.6.0" || fp.Shm.Bytes <= 0 {
		t.Errorf("fingerprint = %+v", fp)
	}
}

func TestQuietHappyPath(t *testing.T) {
	s := start(t, map[string]any{"quiet": true, "min_shm_bytes": 1 << 20}, "", "true")
	if code, _ := s.wait(); code != 0 || s.stderr.String() != "" {
		t.Errorf("exit %d, stderr %q; want 0 and nothing", code, s.stderr.String())
	}
}

// ignoreRaw sets sig to SIG_IGN in this process with the raw system call, so
// the processes it starts inherit it ignored, and returns a function that
// puts the old disposition back.
func ignoreRaw(t *testing.T, sig int) func() {
	t.Helper()
	type sigaction struct {
		handler, flags, restorer, mask uint64
	}
	var old sigaction
	ign := sigaction{handler: 1} // SIG_IGN
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&ign)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		t.Fatalf("rt_sigaction(%d, SIG_IGN): %v", sig, e)
	}
	return func() {
		_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	}
}

// TestSSHHostKeysAtStart: an image with sshd and no host keys (the build
// removes them from its layers) gets them generated before the command
// starts, keeps them across a restart, and an image without sshd gets none.
// /usr/sbin and /etc/ssh are fresh tmpfs mounts inside the sandbox.
func TestSSHHostKeysAtStart(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("needs ssh-keygen (openssh-client, installed by hack/deps.sh)")
	}
	mounts := `mount -t tmpfs sbin /usr/sbin; mount -t tmpfs etcssh /etc/ssh`
	listKeys := `ls /etc/ssh | tr '\n' ' '; echo`
	withSshd := mounts + `; printf '#!/bin/sh\n' > /usr/sbin/sshd; chmod 755 /usr/sbin/sshd`
	s := start(t, nil, withSshd, "sh", "-c", listKeys+`; ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub >/dev/null && echo valid; cat /etc/ssh/ssh_host_ed25519_key.pub > "$DIR/first"`)
	code, out := s.wait()
	want := "ssh_host_ecdsa_key ssh_host_ecdsa_key.pub ssh_host_ed25519_key ssh_host_ed25519_key.pub ssh_host_rsa_key ssh_host_rsa_key.pub \nvalid\n"
	if code != 0 || out != want {
		t.Errorf("with sshd: exit %d, /etc/ssh when the command starts %q, want %q (stderr: %s)", code, out, want, s.stderr.String())
	}
	if !strings.Contains(s.stderr.String(), "3 sshd host key(s) generated") {
		t.Errorf("summary %q does not say the keys were generated", s.stderr.String())
	}

	// A restart: the keys are there (a persistent /etc/ssh) and stay.
	keep := mounts + `; printf '#!/bin/sh\n' > /usr/sbin/sshd; chmod 755 /usr/sbin/sshd
ssh-keygen -q -A >/dev/null; cp /etc/ssh/ssh_host_ed25519_key.pub "$DIR/before"`
	s = start(t, nil, keep, "sh", "-c", `cmp -s /etc/ssh/ssh_host_ed25519_key.pub "$DIR/before" && echo same`)
	if code, out := s.wait(); code != 0 || strings.TrimSpace(out) != "same" || strings.Contains(s.stderr.String(), "generated") {
		t.Errorf("keys present: exit %d, %q, stderr %q; want them kept and nothing generated", code, out, s.stderr.String())
	}

	s = start(t, nil, mounts, "sh", "-c", listKeys)
	if code, out := s.wait(); code != 0 || strings.TrimSpace(out) != "" {
		t.Errorf("without sshd: exit %d, /etc/ssh %q, want empty", code, out)
	}
}
