package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"imagectl/internal/testenv"
)

// needProgram skips without path, or fails under IMAGECTL_E2E=1, where CI
// has installed it (hack/deps.sh) and a skip would hide a broken setup.
func needProgram(t *testing.T, path, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(path); err == nil {
		return
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() && filepath.IsAbs(path) {
		return // a module, not a program
	}
	if os.Getenv("IMAGECTL_E2E") != "" {
		t.Fatalf("%s is missing (Debian's %s; hack/deps.sh installs it): IMAGECTL_E2E=1 runs this test for real", path, pkg)
	}
	t.Skipf("needs %s (Debian's %s, installed by hack/deps.sh)", path, pkg)
}

// accountFiles writes copies of the machine's passwd, shadow and group with
// user jovyan (uid and gid 1000, home, /bin/sh, the password hash given)
// in place of any entry with id 1000, and returns the mount commands that
// put them over /etc inside the sandbox (the machine's own stay untouched).
func accountFiles(t *testing.T, dir, home, hash string) string {
	t.Helper()
	filter := func(src, add string, idField int) string {
		b, err := os.ReadFile(src)
		if err != nil && idField >= 0 {
			t.Fatal(err)
		}
		var out []string
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			f := strings.Split(sc.Text(), ":")
			if len(f) > 0 && (f[0] == "jovyan" || (idField > 0 && len(f) > idField && f[idField] == "1000")) {
				continue
			}
			out = append(out, sc.Text())
		}
		return strings.Join(append(out, add), "\n") + "\n"
	}
	files := map[string]string{
		"passwd": filter("/etc/passwd", "jovyan:x:1000:1000::"+home+":/bin/sh", 2),
		"shadow": filter("/etc/shadow", "jovyan:"+hash+":19000:0:99999:7:::", 0),
		"group":  filter("/etc/group", "jovyan:x:1000:", 2),
	}
	var mounts []string
	for name, content := range files {
		p := filepath.Join(dir, name)
		mode := os.FileMode(0o644)
		if name == "shadow" {
			mode = 0o640
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, "mount --bind "+p+" /etc/"+name)
	}
	return strings.Join(mounts, "\n")
}

// TestServicesAlone runs the built init as PID 1 (new PID and mount
// namespaces on this machine's root, loopback shared with the test) with
// no command and Debian's real sshd and Jupyter notebook declared, as user
// jovyan (1000:1000): ssh with the key works, with the password (which is
// set, and right) it is refused, and so is root; Jupyter answers under
// NB_PREFIX with the token and refuses without, sends the CORS header, runs
// as uid 1000 and has no token on its command line; SIGTERM stops both.
func TestServicesAlone(t *testing.T) {
	needProgram(t, "/usr/sbin/sshd", "openssh-server")
	needProgram(t, "jupyter-notebook", "jupyter-notebook")
	needProgram(t, "ssh", "openssh-client")
	needProgram(t, "openssl", "openssl")
	requireNamespaces(t)

	dir := t.TempDir()
	// The user traverses to its home; sshd wants no group/world-writable
	// directory above the home or the keys.
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home", "jovyan")
	key := filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	const password = "imagectl-test-password"
	hash, err := exec.Command("openssl", "passwd", "-6", password).Output()
	if err != nil {
		t.Fatalf("openssl passwd: %v", err)
	}
	sshPort, nbPort := testenv.FreePort(t), testenv.FreePort(t)
	const token, prefix = "test-token-4f2a9c", "/hub/jovyan/"
	cfg := map[string]any{
		"grace_period": "20s",
		"user":         map[string]any{"name": "jovyan", "uid": 1000, "gid": 1000, "home": home},
		"ssh":          map[string]any{"port": sshPort, "authorized_keys_env": "SSH_AUTHORIZED_KEYS"},
		"jupyter":      map[string]any{"command": []string{"jupyter", "notebook"}},
	}
	setup := "mount -t tmpfs -o mode=755 run /run\n" + accountFiles(t, dir, home, strings.TrimSpace(string(hash)))
	s := startRun(t, run{cfg: cfg, setup: setup, env: []string{
		"SSH_AUTHORIZED_KEYS=" + strings.TrimSpace(string(pub)),
		"JUPYTER_TOKEN=" + token, "NB_PREFIX=" + prefix, "NB_PORT=" + strconv.Itoa(nbPort),
	}})
	s.waitStderr("[sshd] Server listening")

	ssh := func(user string, extra ...string) (string, error) {
		args := append([]string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR", "-p", strconv.Itoa(sshPort)}, extra...)
		cmd := exec.Command("ssh", append(args, user+"@127.0.0.1", "id -u; echo $HOME")...)
		cmd.Stdin = nil
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no terminal: askpass, not a prompt
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	withKey := []string{"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", key}
	if out, err := ssh("jovyan", withKey...); err != nil || !strings.HasPrefix(out, "1000\n"+home+"\n") {
		t.Errorf("ssh with the key: %v: %q, want uid 1000 and HOME %s (init stderr: %s)", err, out, home, s.stderr.String())
	}
	askpass := filepath.Join(dir, "askpass")
	if err := os.WriteFile(askpass, []byte("#!/bin/sh\necho "+password+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Setenv("SSH_ASKPASS", askpass)
	os.Setenv("SSH_ASKPASS_REQUIRE", "force")
	defer os.Unsetenv("SSH_ASKPASS")
	defer os.Unsetenv("SSH_ASKPASS_REQUIRE")
	for _, m := range []string{"password", "keyboard-interactive"} {
		out, err := ssh("jovyan", "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications="+m, "-o", "NumberOfPasswordPrompts=1")
		if err == nil || !strings.Contains(out, "Permission denied (publickey)") {
			t.Errorf("ssh with the right password (%s): %v: %q; want Permission denied (publickey)", m, err, out)
		}
	}
	if out, err := ssh("root", withKey...); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("ssh as root with the key: %v: %q, want Permission denied", err, out)
	}

	checkJupyter(t, s, fmt.Sprintf("http://127.0.0.1:%d%s", nbPort, prefix), token, "jupyter-notebook", "tree")

	_ = syscall.Kill(s.initPID(), syscall.SIGTERM)
	code, _ := s.wait()
	if code != 0 {
		t.Errorf("after SIGTERM: exit %d, want 0 (both services stopped in time) (stderr: %s)", code, s.stderr.String())
	}
}

// checkJupyter checks a Jupyter server the init runs, under the URL base
// (ending in the prefix, with a slash): /api/status answers 200 with the
// token and the CORS header, 403 without or with a wrong one; the tree
// redirects to the login page without it; every process matching proc
// runs as uid 1000 with no token on its command line; api/contents needs
// the token; page (when set) redirects to the login page without it.
func checkJupyter(t *testing.T, s *sandbox, base, token, proc, page string) {
	t.Helper()
	prefix := base[strings.Index(base[len("http://"):], "/")+len("http://"):]
	get := func(path, auth string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Origin", "https://kubeflow.example")
		if auth != "" {
			req.Header.Set("Authorization", "token "+auth)
		}
		c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	deadline := time.Now().Add(90 * time.Second)
	var resp *http.Response
	var err error
	for {
		resp, err = get("api/status", token)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %sapi/status with the token: %v %v (init stderr: %s)", base, resp, err, s.stderr.String())
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin = %q, want *", got)
	}
	for _, bad := range []string{"", "wrong-token"} {
		if resp, err := get("api/status", bad); err != nil || resp.StatusCode != 403 {
			t.Errorf("GET api/status with token %q: %v %v, want 403", bad, resp, err)
		}
	}
	// Jupyter runs as the user, with no secret on its command line.
	out, _ := exec.Command("pgrep", "-f", proc).Output()
	pids := strings.Fields(string(out))
	if len(pids) == 0 {
		t.Errorf("no %s process", proc)
	}
	for _, pid := range pids {
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		status, _ := os.ReadFile("/proc/" + pid + "/status")
		if strings.Contains(string(cmdline), token) {
			t.Errorf("the token is on jupyter's command line: %q", cmdline)
		}
		if !strings.Contains(string(status), "\nUid:\t1000\t1000\t1000\t1000\n") {
			t.Errorf("jupyter (pid %s) does not run as uid 1000:\n%s", pid, status)
		}
	}
	if resp, err := get("api/contents", ""); err != nil || resp.StatusCode != 403 {
		t.Errorf("GET api/contents without a token: %v %v, want 403", resp, err)
	}
	if resp, err := get("api/contents", token); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET api/contents with the token: %v %v, want 200", resp, err)
	}
	if page == "" {
		return
	}
	if resp, err := get(page, ""); err != nil || resp.StatusCode != 302 || !strings.Contains(resp.Header.Get("Location"), prefix+"login") {
		t.Errorf("GET %s without a token: %v %v, want a redirect to %slogin", page, resp, err, prefix)
	}
	if resp, err := get(page, token); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET %s with the token: %v %v, want 200", page, resp, err)
	}
}

// TestJupyterServerAlone is TestServicesAlone's Jupyter part for
// jupyter_server (Debian's python3-jupyter-server 1.23, what JupyterLab runs
// on): its settings come from the ServerApp config the init writes, the
// token from JUPYTER_TOKEN.
func TestJupyterServerAlone(t *testing.T) {
	needProgram(t, "/usr/lib/python3/dist-packages/jupyter_server/__main__.py", "python3-jupyter-server")
	requireNamespaces(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home", "jovyan")
	const token, prefix = "server-token-77c1", "/user/jovyan/"
	port := testenv.FreePort(t)
	cfg := map[string]any{
		"grace_period": "20s",
		"user":         map[string]any{"name": "jovyan", "uid": 1000, "gid": 1000, "home": home},
		"jupyter":      map[string]any{"command": []string{"/usr/bin/python3", "-m", "jupyter_server"}},
	}
	setup := "mount -t tmpfs -o mode=755 run /run\n" + accountFiles(t, dir, home, "*")
	s := startRun(t, run{cfg: cfg, setup: setup, env: []string{
		"JUPYTER_TOKEN=" + token, "NB_PREFIX=" + prefix, "NB_PORT=" + strconv.Itoa(port),
	}})
	checkJupyter(t, s, fmt.Sprintf("http://127.0.0.1:%d%s", port, prefix), token, "jupyter_server", "")
	_ = syscall.Kill(s.initPID(), syscall.SIGTERM)
	if code, _ := s.wait(); code != 0 {
		t.Errorf("after SIGTERM: exit %d, want 0 (stderr: %s)", code, s.stderr.String())
	}
}
