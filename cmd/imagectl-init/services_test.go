package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the built init as PID 1 in new namespaces (see
// init_test.go) with fake services: small shell scripts in place of
// Jupyter's command and of /usr/sbin/sshd (a tmpfs mounted over /usr/sbin in
// the sandbox). /run is a fresh tmpfs in each sandbox, so the init's
// /run/imagectl never reaches the host. TestServicesAlone (services_e2e_test.go)
// runs the real sshd and Jupyter.

// runTmpfs gives the sandbox its own /run.
const runTmpfs = `mount -t tmpfs run /run`

// fakeSshd mounts a tmpfs over /usr/sbin and /etc/ssh and puts a script at
// /usr/sbin/sshd that runs body.
func fakeSshd(body string) string {
	return `mount -t tmpfs sbin /usr/sbin; mount -t tmpfs etcssh /etc/ssh
cat > /usr/sbin/sshd <<'EOF'
#!/bin/sh
` + body + `
EOF
chmod 755 /usr/sbin/sshd`
}

// stoppable is a fake service that logs "NAME up", and on SIGTERM appends
// "NAME term" and, 300 ms later, "NAME exit" to $DIR/order before exiting.
func stoppable(name string) string {
	return `trap 'echo ` + name + ` term >> "$DIR/order"; sleep 0.3; echo ` + name + ` exit >> "$DIR/order"; exit 0' TERM
echo ` + name + ` up
while :; do sleep 0.05; done`
}

// A service that dies is restarted with backoff (1 s, 2 s, 4 s, ...), every
// line it writes reaches the init's stderr prefixed with its name, and the
// init says each time how long it waits.
func TestServiceRestartBackoff(t *testing.T) {
	cfg := map[string]any{"jupyter": map[string]any{"command": []string{"sh", "-c", "echo up; exit 3"}}}
	s := startRun(t, run{cfg: cfg, setup: runTmpfs, env: []string{"JUPYTER_TOKEN=secret"}}, "sleep", "5")
	code, _ := s.wait()
	stderr := s.stderr.String()
	if code != 0 {
		t.Fatalf("exit %d, want the command's 0 (stderr: %s)", code, stderr)
	}
	if n := strings.Count(stderr, "[jupyter] up\n"); n != 3 {
		t.Errorf("the service started %d times in 5 s, want 3 (at 0, 1 and 3 s) (stderr: %s)", n, stderr)
	}
	for _, want := range []string{"service jupyter exited with status 3", "restarting it in 1s", "restarting it in 2s", "restarting it in 4s"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %s", want, stderr)
		}
	}
}

// On SIGTERM the init stops the command first, then the services in
// reverse start order (sshd starts first, Jupyter second), each only once
// the one before it has exited, and exits with the command's code.
func TestServicesStopInReverseOrder(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("needs ssh-keygen (openssh-client, installed by hack/deps.sh)")
	}
	home := t.TempDir()
	cfg := map[string]any{
		"grace_period": "20s",
		"user":         map[string]any{"name": "svc", "uid": 1000, "gid": 1000, "home": home},
		"ssh":          map[string]any{"port": 2222},
		"jupyter":      map[string]any{"command": []string{"sh", "-c", stoppable("jupyter")}},
	}
	// The user's processes write $DIR/order.
	setup := runTmpfs + "\n" + fakeSshd(stoppable("sshd")) + "\n" + `chmod 755 "$(dirname "$DIR")"; chmod 777 "$DIR"`
	s := startRun(t, run{cfg: cfg, setup: setup, env: []string{"JUPYTER_TOKEN=secret"}},
		"sh", "-c", `trap 'echo cmd term >> "$DIR/order"; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
	if l := s.line(); l != "ready" {
		t.Fatalf("first line %q, want ready", l)
	}
	s.waitStderr("[sshd] sshd up")
	s.waitStderr("[jupyter] jupyter up")
	_ = syscall.Kill(s.initPID(), syscall.SIGTERM)
	code, _ := s.wait()
	if code != 7 {
		t.Errorf("exit %d, want the command's 7 (stderr: %s)", code, s.stderr.String())
	}
	b, _ := os.ReadFile(filepath.Join(s.dir, "order"))
	want := "cmd term\njupyter term\njupyter exit\nsshd term\nsshd exit\n"
	if string(b) != want {
		t.Errorf("stop order:\n%s\nwant:\n%s(stderr: %s)", b, want, s.stderr.String())
	}
}

// With no command the services run alone until a SIGTERM; one that ignores
// it is killed when the grace period is over, and the init says so.
func TestServicesAloneKilledAfterGrace(t *testing.T) {
	cfg := map[string]any{
		"grace_period": "1s",
		"jupyter":      map[string]any{"command": []string{"sh", "-c", `trap '' TERM; echo up; while :; do sleep 0.05; done`}},
	}
	s := startRun(t, run{cfg: cfg, setup: runTmpfs, env: []string{"JUPYTER_TOKEN=secret"}})
	s.waitStderr("[jupyter] up")
	begin := time.Now()
	_ = syscall.Kill(s.initPID(), syscall.SIGTERM)
	code, _ := s.wait()
	took := time.Since(begin)
	if code != 137 {
		t.Errorf("exit %d, want 137 (a service had to be killed) (stderr: %s)", code, s.stderr.String())
	}
	if took < time.Second || took > 4*time.Second {
		t.Errorf("the init exited %v after SIGTERM, want just over the 1s grace period", took)
	}
	if !strings.Contains(s.stderr.String(), "1 service(s) did not stop in time") {
		t.Errorf("stderr does not say the service was killed: %s", s.stderr.String())
	}
}

// Jupyter without a token or a password is never started: alone, the init
// refuses the container (exit 1); beside a command, it says so and runs the
// command.
func TestJupyterRefusedWithoutSecret(t *testing.T) {
	cfg := map[string]any{"jupyter": map[string]any{
		"command":       []string{"sh", "-c", "echo STARTED; sleep 30"},
		"password_file": "/nonexistent/jupyter-password",
	}}
	s := startRun(t, run{cfg: cfg, setup: runTmpfs})
	code, _ := s.wait()
	stderr := s.stderr.String()
	if code != 1 || !strings.Contains(stderr, "refusing to start jupyter without a token or a password: set one of $JUPYTER_TOKEN, /nonexistent/jupyter-password") || strings.Contains(stderr, "STARTED") {
		t.Errorf("alone: exit %d, stderr %q; want 1 and the refusal, jupyter never started", code, stderr)
	}

	s = startRun(t, run{cfg: cfg, setup: runTmpfs}, "sh", "-c", "echo command ran")
	code, out := s.wait()
	stderr = s.stderr.String()
	if code != 0 || strings.TrimSpace(out) != "command ran" || !strings.Contains(stderr, "error: refusing to start jupyter") || strings.Contains(stderr, "STARTED") {
		t.Errorf("with a command: exit %d, output %q, stderr %q; want 0, the command's output and the refusal", code, out, stderr)
	}

	// The same config with a token starts it (the refusal is about the secret).
	s = startRun(t, run{cfg: cfg, setup: runTmpfs, env: []string{"JUPYTER_TOKEN=t0k"}}, "sleep", "1")
	s.wait()
	if !strings.Contains(s.stderr.String(), "[jupyter] STARTED") {
		t.Errorf("with a token: stderr %q, want jupyter started", s.stderr.String())
	}
}

// Run as root with a user configured, the init prepares the folders as
// root and then runs the command as the user: uid, gid, the supplementary
// groups /etc/group gives it, HOME, USER, LOGNAME; the home and TMPDIR
// belong to the user.
func TestCommandRunsAsUser(t *testing.T) {
	dir := t.TempDir()
	home, tmp := filepath.Join(dir, "home", "jovyan"), filepath.Join(dir, "scratch", "tmp")
	if err := os.WriteFile(filepath.Join(dir, "group"), []byte("root:x:0:\njovyan:x:1000:\nextra:x:4242:someone,jovyan\nother:x:4243:someone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"user":   map[string]any{"name": "jovyan", "uid": 1000, "gid": 1000, "home": home},
		"tmpdir": tmp,
	}
	setup := "mount --bind " + filepath.Join(dir, "group") + " /etc/group"
	s := start(t, cfg, setup, "sh", "-c", `grep -E '^(Uid|Gid|Groups):' /proc/self/status | tr -s '\t ' ' '; echo "HOME=$HOME USER=$USER LOGNAME=$LOGNAME"`)
	code, out := s.wait()
	want := "Uid: 1000 1000 1000 1000\nGid: 1000 1000 1000 1000\nGroups: 1000 4242 \nHOME=" + home + " USER=jovyan LOGNAME=jovyan\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, the command saw:\n%s\nwant:\n%s(stderr: %s)", code, out, want, s.stderr.String())
	}
	for _, p := range []string{home, tmp} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 || st.Gid != 1000 {
			t.Errorf("%s belongs to %d:%d, want 1000:1000", p, st.Uid, st.Gid)
		}
	}
	if !strings.Contains(s.stderr.String(), "user jovyan (1000:1000)") {
		t.Errorf("the summary does not name the user: %s", s.stderr.String())
	}
}

// Started as a non-root user already, the init skips what needs root, says
// so in one warning, and runs the command (with the user's environment).
func TestNonRootStartSkipsRootSteps(t *testing.T) {
	home := t.TempDir()
	cfg := map[string]any{
		"swappiness": 10,
		"user":       map[string]any{"name": "jovyan", "uid": 1000, "gid": 1000, "home": home},
		"ssh":        map[string]any{},
	}
	// The config in $DIR must be readable by uid 1000.
	setup := `chmod 755 "$(dirname "$DIR")" "$DIR"`
	s := startRun(t, run{cfg: cfg, setup: setup, init: []string{"setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", initBin, "--"}},
		"sh", "-c", `id -u; echo "HOME=$HOME USER=$USER"`)
	code, out := s.wait()
	stderr := s.stderr.String()
	if want := "1000\nHOME=" + home + " USER=jovyan\n"; code != 0 || out != want {
		t.Errorf("exit %d, output %q, want 0 and %q (stderr: %s)", code, out, want, stderr)
	}
	want := "imagectl-init: warning: running as uid 1000, not root: skipping swappiness, the folders' ownership and the switch to user jovyan, sshd (they need root); the rest goes on\n"
	if n := len(regexp.MustCompile(`(?m)^imagectl-init: warning:`).FindAllString(stderr, -1)); n != 1 || !strings.Contains(stderr, want) {
		t.Errorf("stderr has %d warnings, want exactly one:\n%s\ngot:\n%s", n, want, stderr)
	}
}

// The fingerprint, written before the command starts, lists the user and
// the services with their pid, port and state; a refused Jupyter is listed
// as refused.
func TestFingerprintListsServices(t *testing.T) {
	fpDir := t.TempDir()
	fp := filepath.Join(fpDir, "fp.json")
	// The user's command reads it, and Jupyter starts in a home there.
	for _, d := range []string{filepath.Dir(fpDir), fpDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := map[string]any{
		"fingerprint_path": fp,
		"user":             map[string]any{"name": "jovyan", "uid": 1000, "gid": 1000, "home": filepath.Join(fpDir, "home")},
		"jupyter":          map[string]any{"command": []string{"sh", "-c", "sleep 30"}, "port": 8890},
	}
	type fingerprint struct {
		User *struct {
			Name     string
			UID      int
			Switched bool
		}
		Services []struct {
			Name, User, State string
			PID, Port         int
		}
	}
	read := func(s *sandbox) fingerprint {
		t.Helper()
		code, out := s.wait()
		var f fingerprint
		if err := json.Unmarshal([]byte(out), &f); code != 0 || err != nil {
			t.Fatalf("exit %d, fingerprint %q: %v (stderr: %s)", code, out, err, s.stderr.String())
		}
		return f
	}
	f := read(startRun(t, run{cfg: cfg, setup: runTmpfs, env: []string{"JUPYTER_TOKEN=t"}}, "cat", fp))
	if f.User == nil || f.User.Name != "jovyan" || f.User.UID != 1000 || !f.User.Switched {
		t.Errorf("user = %+v, want jovyan 1000 switched", f.User)
	}
	if len(f.Services) != 1 || f.Services[0].Name != "jupyter" || f.Services[0].PID <= 0 || f.Services[0].Port != 8890 || f.Services[0].User != "jovyan" || f.Services[0].State != "running" {
		t.Errorf("services = %+v, want jupyter running as jovyan on 8890 with a pid", f.Services)
	}
	f = read(startRun(t, run{cfg: cfg, setup: runTmpfs}, "cat", fp))
	if len(f.Services) != 1 || f.Services[0].State != "refused" {
		t.Errorf("without a token: services = %+v, want jupyter refused", f.Services)
	}
}
