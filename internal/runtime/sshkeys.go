package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"imagectl/internal/logs"
)

// sshd host keys are never baked into an image layer (every container of an
// image would share them, and anyone who can pull the image holds them): the
// build removes them, and the init generates them at container start, before
// the command, so an sshd the command starts finds them.

// sshdPath is where an image's sshd is installed (openssh-server).
const sshdPath = "usr/sbin/sshd"

// sshHostKeyTypes are the host keys sshd loads by default, and that
// `ssh-keygen -A` generates: /etc/ssh/ssh_host_<type>_key (and .pub).
var sshHostKeyTypes = []string{"rsa", "ecdsa", "ed25519"}

// SSHHostKeys is what the host key step found and did.
type SSHHostKeys struct {
	// Sshd says the image has /usr/sbin/sshd; without it the step does nothing.
	Sshd bool
	// Generated are the private key files created at this start.
	Generated []string
}

// ensureSSHHostKeys generates the default sshd host keys that are missing
// under root (the container's /), only when sshd is installed, by running
// `ssh-keygen -A` (with `-f root` when root is not /) found in the PATH of
// env. Keys already present are left alone, so a container keeps its keys
// across restarts. ssh-keygen writes each key to a temporary file and renames
// it, and exits 0 even when it could not write one, so the result is checked
// by looking for the files.
func ensureSSHHostKeys(ctx context.Context, root string, env []string) (SSHHostKeys, error) {
	var r SSHHostKeys
	if fi, err := os.Stat(filepath.Join(root, sshdPath)); err != nil || fi.IsDir() {
		return r, nil
	}
	r.Sshd = true
	dir := filepath.Join(root, "etc/ssh")
	var missing []string
	for _, t := range sshHostKeyTypes {
		key := filepath.Join(dir, "ssh_host_"+t+"_key")
		if _, err := os.Stat(key); err != nil {
			missing = append(missing, key)
		}
	}
	if len(missing) == 0 {
		return r, nil
	}
	keygen, err := lookPath("ssh-keygen", env)
	if err != nil {
		return r, fmt.Errorf("sshd is installed but its host keys are missing and ssh-keygen is not in PATH (%w); sshd will refuse to start: install openssh-client in the image", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, fmt.Errorf("creating %s for the sshd host keys: %w; sshd will refuse to start: make /etc/ssh writable (or mount the host keys there)", dir, err)
	}
	args := []string{"-A"}
	if filepath.Clean(root) != "/" {
		args = append(args, "-f", root)
	}
	out, runErr := runQuiet(keygen, append([]string{"ssh-keygen"}, args...), env)
	var still []string
	for _, key := range missing {
		if _, err := os.Stat(key); err == nil {
			r.Generated = append(r.Generated, key)
		} else {
			still = append(still, key)
		}
	}
	logs.From(ctx).Debug("sshd host keys", "generated", r.Generated)
	if len(still) > 0 || runErr != nil {
		msg := strings.TrimSpace(out)
		if runErr != nil {
			msg = strings.TrimSpace(runErr.Error() + ": " + msg)
		}
		return r, fmt.Errorf("generating the sshd host keys with %s %s: %s; still missing: %s; sshd will refuse to start: make /etc/ssh writable (or mount the host keys there)",
			keygen, strings.Join(args, " "), msg, strings.Join(still, ", "))
	}
	return r, nil
}

// runQuiet runs path with argv and env, its output captured, and waits for
// it. (syscall directly rather than os/exec: the init keeps its start-up
// small, and nothing else reaps while it runs, before the command starts.)
func runQuiet(path string, argv, env []string) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer r.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		w.Close()
		return "", err
	}
	defer null.Close()
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{null.Fd(), w.Fd(), w.Fd()}})
	w.Close()
	if err != nil {
		return "", err
	}
	out, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err != nil:
		return string(out), err
	case ws.Exited() && ws.ExitStatus() != 0:
		return string(out), fmt.Errorf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		return string(out), fmt.Errorf("killed by %s", SignalName(ws.Signal()))
	}
	return string(out), nil
}
