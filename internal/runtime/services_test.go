package runtime

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSSHService(t *testing.T) {
	root, run := t.TempDir(), t.TempDir()
	c := &SSH{Port: 2200, AuthorizedKeysFile: filepath.Join(root, "keys"), AuthorizedKeysEnv: "KEYS"}
	id := &Identity{Name: "jovyan", UID: 1000, GID: 1000, Home: "/home/jovyan"}
	env := []string{"PATH=/usr/bin:/bin", "KEYS=ssh-ed25519 AAAAenv env@x\n\n# a comment"}

	if _, _, err := sshService(c, id, root, run, env); err == nil || !strings.Contains(err.Error(), "is not installed") {
		t.Errorf("without sshd: err = %v, want not installed", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "usr/sbin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, sshdPath), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sshService(c, nil, root, run, env); err == nil || !strings.Contains(err.Error(), "no user") {
		t.Errorf("without a user: err = %v, want no user", err)
	}
	if err := os.WriteFile(c.AuthorizedKeysFile, []byte("ssh-rsa AAAAfile file@x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, warn, err := sshService(c, id, root, run, env)
	if err != nil || warn != "" {
		t.Fatalf("sshService = %v, %q", err, warn)
	}
	keys := filepath.Join(run, "ssh/authorized_keys")
	wantArgv := []string{filepath.Join(root, sshdPath), "-D", "-e", "-p", "2200",
		"-o", "PasswordAuthentication=no", "-o", "KbdInteractiveAuthentication=no", "-o", "PermitEmptyPasswords=no",
		"-o", "PermitRootLogin=no", "-o", "AuthenticationMethods=publickey", "-o", "UsePAM=no",
		"-o", "AuthorizedKeysFile=" + keys, "-o", "AllowUsers=jovyan"}
	if diff := cmp.Diff(wantArgv, s.argv); diff != "" {
		t.Errorf("sshd argv (-want +got):\n%s", diff)
	}
	if s.cred != nil || s.Port != 2200 || s.Name != "sshd" {
		t.Errorf("service = %+v, want sshd as root on 2200", s)
	}
	b, _ := os.ReadFile(keys)
	if string(b) != "ssh-rsa AAAAfile file@x\nssh-ed25519 AAAAenv env@x\n" {
		t.Errorf("authorized_keys = %q, want the file's key then the variable's", b)
	}
	fi, err := os.Stat(keys)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o600 || (os.Geteuid() == 0 && (st.Uid != 1000 || st.Gid != 1000)) {
		t.Errorf("authorized_keys: %v %d:%d, want 0600 owned by 1000:1000", fi.Mode().Perm(), st.Uid, st.Gid)
	}
	if _, err := os.Stat(filepath.Join(root, "run/sshd")); err != nil {
		t.Errorf("the privilege separation directory: %v", err)
	}

	// No key anywhere: sshd runs, with a warning that nobody can log in.
	_, warn, err = sshService(&SSH{AuthorizedKeysEnv: "NONE"}, id, root, run, env)
	if err != nil || !strings.Contains(warn, "no authorized key (none in $NONE)") {
		t.Errorf("no keys: %v, warning %q", err, warn)
	}
}

func TestJupyterService(t *testing.T) {
	run := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "NB_PREFIX=notebook/ns/x", "NB_PORT=9999", "JUPYTER_CONFIG_PATH=/etc/extra"}

	_, err := jupyterService(&Jupyter{Command: []string{"sh"}, TokenFile: "/nonexistent/token", PasswordEnv: "PW"}, nil, run, env)
	var refused *JupyterRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "set one of $JUPYTER_TOKEN, /nonexistent/token, $PW") {
		t.Fatalf("no secret: err = %v, want a JupyterRefusedError naming the sources", err)
	}
	if _, err := jupyterService(&Jupyter{Command: []string{"no-such-jupyter"}}, nil, run, append(env, "JUPYTER_TOKEN=x")); err == nil || errors.As(err, &refused) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("no jupyter: err = %v, want not found", err)
	}

	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := jupyterService(&Jupyter{Command: []string{"sh", "-c", "serve"}, TokenFile: tokenFile}, nil, run, env)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sh", "-c", "serve"}, s.argv); diff != "" || s.Port != 9999 {
		t.Errorf("argv (-want +got):\n%s port %d, want the command unchanged and port 9999", diff, s.Port)
	}
	if got := getenvFrom(s.env, "JUPYTER_TOKEN"); got != "s3cret" {
		t.Errorf("JUPYTER_TOKEN = %q, want the file's token", got)
	}
	if got := getenvFrom(s.env, "JUPYTER_CONFIG_PATH"); got != filepath.Join(run, "jupyter")+":/etc/extra" {
		t.Errorf("JUPYTER_CONFIG_PATH = %q, want the init's directory first", got)
	}
	var nb, srv map[string]map[string]any
	for name, dst := range map[string]*map[string]map[string]any{"jupyter_notebook_config.json": &nb, "jupyter_server_config.json": &srv} {
		b, err := os.ReadFile(filepath.Join(run, "jupyter", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(string(b), "s3cret") {
			t.Errorf("%s holds the token: %s", name, b)
		}
	}
	want := map[string]any{"ip": "0.0.0.0", "port": 9999.0, "base_url": "/notebook/ns/x/", "allow_origin": "*", "open_browser": false}
	if diff := cmp.Diff(want, nb["NotebookApp"]); diff != "" {
		t.Errorf("NotebookApp (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, srv["ServerApp"]); diff != "" {
		t.Errorf("ServerApp (-want +got):\n%s", diff)
	}

	// A hashed password goes in the config files, not the environment.
	s, err = jupyterService(&Jupyter{Command: []string{"sh"}, PasswordEnv: "PW"}, nil, run, append(env, "PW=argon2:$abc"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(run, "jupyter", "jupyter_server_config.json"))
	if !strings.Contains(string(b), `"hashed_password": "argon2:$abc"`) || getenvFrom(s.env, "JUPYTER_TOKEN") != "" {
		t.Errorf("with a password: config %s, JUPYTER_TOKEN %q", b, getenvFrom(s.env, "JUPYTER_TOKEN"))
	}
	if fi, _ := os.Stat(filepath.Join(run, "jupyter", "jupyter_server_config.json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", fi.Mode().Perm())
	}
}
