package build

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"imagectl/internal/initconfig"
	"imagectl/internal/testenv"
)

// TestE2EAccessServices builds, with imagectl and the real buildkitd, an
// image on the local Debian base with Debian's openssh-server and
// jupyter-notebook, runtime user jovyan (1000:1000), sshd and Jupyter
// declared, and runs it under podman with the init as PID 1:
//   - the Kubeflow notebook contract (NVIDIA container-canary's
//     examples/kubeflow.yaml): the workload is jovyan, uid 1000,
//     HOME=/home/jovyan; HTTP on 8888 under NB_PREFIX answers with the
//     token (403 without); Access-Control-Allow-Origin: * is sent;
//   - with no command (the services alone): ssh by key works as jovyan, a
//     password login is not even offered, root is refused;
//   - podman stop: both services stop within the grace period, exit 0;
//   - under containerd (ctr run) too, a command runs as jovyan.
func TestE2EAccessServices(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	for _, p := range []string{"podman", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is needed (make deps installs it): %v", p, err)
		}
	}
	debs, err := resolveDebs(ctx, e.c, e.base.Pull(), "openssh-server", "jupyter-notebook")
	if err != nil {
		t.Fatal(err)
	}
	l := e.lock(t, uniq("access"), "1.0.0", smallCore)
	l.Apt = debs
	l.Policy.SSHKeyOnly = true
	l.Runtime = initconfig.Config{
		GracePeriod: initconfig.Duration(15 * time.Second),
		User:        &initconfig.User{Name: "jovyan", UID: 1000, GID: 1000, Home: "/home/jovyan"},
		SSH:         &initconfig.SSH{Port: 2222, AuthorizedKeysEnv: "SSH_AUTHORIZED_KEYS", AuthorizedKeysFile: "/etc/imagectl/ssh/authorized_keys"},
		Jupyter:     &initconfig.Jupyter{Command: []string{"jupyter", "notebook"}},
	}
	dir, err := os.MkdirTemp("", "imagectl-build-e2e-access-")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("IMAGECTL_KEEP_LAYOUT") == "" {
		t.Cleanup(func() { os.RemoveAll(dir) })
	} else {
		t.Logf("keeping the OCI layout %s", dir)
	}
	begin := time.Now()
	r, err := Solve(ctx, e.c, l, WithInit(e.init), WithOCILayout(dir), WithPush(true))
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	t.Logf("built %s in %v: %d debs, %d bytes", r.Digest, time.Since(begin).Round(time.Second), len(debs), r.Size)

	key := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	const token, prefix = "e2e-token-9b1d", "/notebook/team/nb/"
	env := []string{"-e", "SSH_AUTHORIZED_KEYS=" + strings.TrimSpace(string(pub)), "-e", "JUPYTER_TOKEN=" + token, "-e", "NB_PREFIX=" + prefix}
	podman := func(args ...string) *exec.Cmd {
		return exec.Command("podman", args...)
	}
	limits := []string{"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}

	// The workload as the platform sees it: a command runs as jovyan.
	args := append(append([]string{"run", "--rm", "--network", "none"}, limits...), env...)
	cmd := podman(append(args, "oci:"+dir, "sh", "-c", `id -u; id -g; whoami; echo "$HOME"; stat -c %u:%g "$HOME"; cat /proc/1/comm`)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman run with a command: %v\n%s\n%s", err, out, stderr.String())
	}
	if want := "1000\n1000\njovyan\n/home/jovyan\n1000:1000\nimagectl-init\n"; string(out) != want {
		t.Errorf("the command saw:\n%s\nwant:\n%s(stderr: %s)", out, want, stderr.String())
	}

	// The same under containerd (make up's), pulled by digest: started as
	// root, the init switches to jovyan.
	if e.env.Containerd != "" {
		ctr := func(args ...string) *exec.Cmd {
			return exec.Command(e.env.Tool(t, "ctr"), append([]string{"--address", e.env.Containerd, "--namespace", "imagectl-build-e2e"}, args...)...)
		}
		if out, err := ctr("image", "pull", "--plain-http", r.Ref).CombinedOutput(); err != nil {
			t.Fatalf("ctr image pull %s: %v\n%s", r.Ref, err, out)
		}
		t.Cleanup(func() { _ = ctr("image", "rm", r.Ref).Run() })
		out, err := ctr("run", "--rm", "--env", "JUPYTER_TOKEN="+token, r.Ref, uniq("access"), initconfig.InitPath, "--", "sh", "-c", `id -u; whoami; echo "$HOME"`).Output()
		if err != nil || string(out) != "1000\njovyan\n/home/jovyan\n" {
			t.Errorf("ctr run: %v: %q, want 1000, jovyan, /home/jovyan", err, out)
		}
	} else if os.Getenv("IMAGECTL_E2E") == "1" {
		t.Fatal("IMAGECTL_E2E=1 but CONTAINERD_ADDRESS is not set: hack/up.sh starts containerd")
	}

	// Started as uid 1000 (Kubernetes runAsUser): the init skips root's
	// steps with one warning and runs the command as that uid.
	args = append(append([]string{"run", "--rm", "--network", "none", "--user", "1000:1000"}, limits...), env...)
	cmd = podman(append(args, "oci:"+dir, "sh", "-c", `id -u; echo "$HOME"`)...)
	stderr.Reset()
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil || string(out) != "1000\n/home/jovyan\n" {
		t.Errorf("podman run --user 1000:1000: %v: %q, want 1000 and /home/jovyan (stderr: %s)", err, out, stderr.String())
	}
	if n := strings.Count(stderr.String(), "warning: running as uid 1000, not root: skipping"); n != 1 {
		t.Errorf("started as uid 1000: %d non-root warnings, want 1:\n%s", n, stderr.String())
	}

	// The services alone, published on loopback.
	nbPort, sshPort := testenv.FreePort(t), testenv.FreePort(t)
	name := uniq("imagectl-access")
	args = append(append([]string{"run", "-d", "--name", name, "-p", fmt.Sprintf("127.0.0.1:%d:8888", nbPort), "-p", fmt.Sprintf("127.0.0.1:%d:2222", sshPort)}, limits...), env...)
	if out, err := podman(append(args, "oci:"+dir)...).CombinedOutput(); err != nil {
		t.Fatalf("podman run -d: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = podman("rm", "-f", name).Run() })
	logs := func() string {
		b, _ := podman("logs", name).CombinedOutput()
		return string(b)
	}

	base := fmt.Sprintf("http://127.0.0.1:%d%s", nbPort, prefix)
	get := func(path, tok string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Origin", "https://kubeflow.example")
		if tok != "" {
			req.Header.Set("Authorization", "token "+tok)
		}
		c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	var resp *http.Response
	for deadline := time.Now().Add(2 * time.Minute); ; {
		resp, err = get("api/status", token)
		if (err == nil && resp.StatusCode == 200) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %sapi/status with the token: %v %v\ncontainer log:\n%s", base, resp, err, logs())
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin = %q, want *", got)
	}
	if resp, err := get("api/status", ""); err != nil || resp.StatusCode != 403 {
		t.Errorf("GET api/status without the token: %v %v, want 403", resp, err)
	}
	if resp, err := get("tree", ""); err != nil || resp.StatusCode != 302 || !strings.Contains(resp.Header.Get("Location"), prefix+"login") {
		t.Errorf("GET tree without the token: %v %v, want a redirect to the login page", resp, err)
	}

	ssh := func(user string, extra ...string) (string, error) {
		a := append([]string{"-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
			"-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-p", strconv.Itoa(sshPort)}, extra...)
		out, err := exec.Command("ssh", append(a, user+"@127.0.0.1", "id -u; echo $HOME")...).CombinedOutput()
		return string(out), err
	}
	withKey := []string{"-o", "IdentitiesOnly=yes", "-i", key}
	if out, err := ssh("jovyan", withKey...); err != nil || out != "1000\n/home/jovyan\n" {
		t.Errorf("ssh jovyan with the key: %v: %q, want uid 1000 and its home\ncontainer log:\n%s", err, out, logs())
	}
	if out, err := ssh("jovyan", "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password,keyboard-interactive"); err == nil || !strings.Contains(out, "Permission denied (publickey)") {
		t.Errorf("ssh jovyan by password: %v: %q, want Permission denied (publickey)", err, out)
	}
	if out, err := ssh("root", withKey...); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("ssh root with the key: %v: %q, want Permission denied", err, out)
	}

	if out, err := podman("stop", "-t", "30", name).CombinedOutput(); err != nil {
		t.Fatalf("podman stop: %v\n%s", err, out)
	}
	code, _ := podman("inspect", "-f", "{{.State.ExitCode}}", name).Output()
	l2 := logs()
	if strings.TrimSpace(string(code)) != "0" {
		t.Errorf("exit code after podman stop = %s, want 0\n%s", code, l2)
	}
	for _, want := range []string{"user jovyan (1000:1000) · sshd on port 2222 · jupyter on port 8888", "[sshd] Server listening", "[jupyter] "} {
		if !strings.Contains(l2, want) {
			t.Errorf("the container log lacks %q:\n%s", want, l2)
		}
	}
}

// TestE2EDemoAsUID1000 runs the demo image (no runtime user) under podman
// and containerd (ctr run --user) as uid 1000, as a platform with runAsUser
// does: the init needs no root for
// what the demo asks (storage wait, its local fallback), the command runs
// as 1000 and imports the locked packages, and no warning is about root.
func TestE2EDemoAsUID1000(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	l := e.lock(t, uniq("demo-uid"), "1.0.0", smallCore)
	dir, err := os.MkdirTemp("", "imagectl-build-e2e-uid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r, err := Solve(ctx, e.c, l, WithInit(e.init), WithOCILayout(dir), WithPush(true))
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	const script = `id -u; /opt/venv/bin/python -c 'import demo_core, demo_util; print("ok")'; cat /proc/1/comm`
	check := func(runtime string, cmd *exec.Cmd) {
		t.Helper()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != "1000\nok\nimagectl-init\n" {
			t.Errorf("%s as uid 1000: %v: %q, want 1000, ok, imagectl-init (stderr: %s)", runtime, err, out, stderr.String())
		}
		if strings.Contains(stderr.String(), "not root") {
			t.Errorf("%s: the demo asks nothing that needs root, yet the init says: %s", runtime, stderr.String())
		}
	}
	check("podman", exec.Command("podman", "run", "--rm", "--network", "none", "--user", "1000:1000",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "oci:"+dir, "sh", "-c", script))

	// containerd (make up's), the image pulled by digest from the registry.
	if e.env.Containerd == "" {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatal("IMAGECTL_E2E=1 but CONTAINERD_ADDRESS is not set: hack/up.sh starts containerd")
		}
		t.Skip("CONTAINERD_ADDRESS is not set: make up starts containerd")
	}
	ctr := func(args ...string) *exec.Cmd {
		return exec.Command(e.env.Tool(t, "ctr"), append([]string{"--address", e.env.Containerd, "--namespace", "imagectl-build-e2e"}, args...)...)
	}
	if out, err := ctr("image", "pull", "--plain-http", r.Ref).CombinedOutput(); err != nil {
		t.Fatalf("ctr image pull %s: %v\n%s", r.Ref, err, out)
	}
	t.Cleanup(func() { _ = ctr("image", "rm", r.Ref).Run() })
	// ctr run's arguments replace the image's entrypoint too: name the init.
	check("containerd", ctr("run", "--rm", "--user", "1000:1000", r.Ref, uniq("uid1000"), initconfig.InitPath, "--", "sh", "-c", script))
}
