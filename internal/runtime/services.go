package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Service is a program the init runs beside the command (or alone, when the
// container has no command) and restarts when it dies: sshd, Jupyter.
type Service struct {
	// Name prefixes the service's log lines and names it in the init's.
	Name string `json:"name"`
	// Port is where it listens, for the fingerprint.
	Port int `json:"port,omitempty"`
	// User is who it runs as ("root" for sshd).
	User string `json:"user,omitempty"`

	path string
	argv []string
	env  []string
	dir  string
	cred *syscall.Credential
}

// NewService makes a service that runs argv (argv[0] found in the PATH of
// env) with env, in dir ("" for the init's), as id (nil for the init's
// user). Tests and callers with their own programs use it; the init makes
// sshd's and Jupyter's from the runtime config.
func NewService(name string, argv, env []string, dir string, id *Identity) (Service, error) {
	if len(argv) == 0 {
		return Service{}, fmt.Errorf("service %s: no command", name)
	}
	path, err := lookPath(argv[0], env)
	if err != nil {
		return Service{}, fmt.Errorf("service %s: %w", name, err)
	}
	s := Service{Name: name, path: path, argv: argv, env: env, dir: dir, cred: id.credential(), User: "root"}
	if id != nil {
		s.User = id.Name
	} else if u := os.Geteuid(); u != 0 {
		s.User = strconv.Itoa(u)
	}
	return s, nil
}

// JupyterRefusedError says the init will not start Jupyter: it has neither
// a token nor a hashed password, and a Jupyter without one would let anyone
// who reaches the port run code in the container.
type JupyterRefusedError struct {
	Sources []string
}

func (e *JupyterRefusedError) Error() string {
	return fmt.Sprintf("refusing to start jupyter without a token or a password: set one of %s (a hashed password is the output of jupyter's passwd())", strings.Join(e.Sources, ", "))
}

// Defaults of the services.
const (
	DefaultSSHPort         = 22
	DefaultJupyterPort     = 8888
	DefaultJupyterPortEnv  = "NB_PORT"
	DefaultJupyterBaseEnv  = "NB_PREFIX"
	DefaultJupyterTokenEnv = "JUPYTER_TOKEN"
)

// sshdOptions are what the init passes sshd on its command line, which
// wins over every sshd_config: keys only, no root.
var sshdOptions = []string{
	"PasswordAuthentication=no",
	"KbdInteractiveAuthentication=no",
	"PermitEmptyPasswords=no",
	"PermitRootLogin=no",
	"AuthenticationMethods=publickey",
	// PAM's session modules (pam_loginuid) fail in a container without
	// CAP_AUDIT_CONTROL and close every session; keys need no PAM.
	"UsePAM=no",
}

// sshService prepares sshd: the privilege-separation directory, the
// authorized keys of the user (from the mounted file and the variable,
// written to runDir/ssh/authorized_keys, 0600, the user's), and the
// command line. The second result is a warning the service runs with.
func sshService(c *SSH, id *Identity, root, runDir string, env []string) (Service, string, error) {
	sshd := filepath.Join(root, sshdPath)
	if fi, err := os.Stat(sshd); err != nil || fi.IsDir() {
		return Service{}, "", fmt.Errorf("ssh is declared but %s is not installed; not starting it: add openssh-server to the image's apt packages", sshd)
	}
	if id == nil {
		return Service{}, "", errors.New("ssh is declared but the runtime block has no user to log in as (root logins are off); not starting it: add a user block")
	}
	if err := os.MkdirAll(filepath.Join(root, "run/sshd"), 0o755); err != nil {
		return Service{}, "", fmt.Errorf("creating sshd's privilege separation directory: %w", err)
	}
	var keys []string
	var sources []string
	if c.AuthorizedKeysFile != "" {
		sources = append(sources, c.AuthorizedKeysFile)
		b, err := os.ReadFile(c.AuthorizedKeysFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return Service{}, "", fmt.Errorf("reading the authorized keys: %w", err)
		}
		keys = append(keys, keyLines(string(b))...)
	}
	if c.AuthorizedKeysEnv != "" {
		sources = append(sources, "$"+c.AuthorizedKeysEnv)
		keys = append(keys, keyLines(getenvFrom(env, c.AuthorizedKeysEnv))...)
	}
	dir := filepath.Join(runDir, "ssh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Service{}, "", fmt.Errorf("creating %s: %w", dir, err)
	}
	file := filepath.Join(dir, "authorized_keys")
	if err := writeOwned(file, []byte(strings.Join(keys, "\n")+"\n"), id); err != nil {
		return Service{}, "", err
	}
	warn := ""
	if len(keys) == 0 {
		what := "no source is configured (runtime.ssh.authorized_keys_file or authorized_keys_env)"
		if len(sources) > 0 {
			what = "none in " + strings.Join(sources, " or ")
		}
		warn = fmt.Sprintf("sshd starts with no authorized key (%s): nobody can log in until the container restarts with one", what)
	}
	port := c.Port
	if port == 0 {
		port = DefaultSSHPort
	}
	argv := []string{sshd, "-D", "-e", "-p", strconv.Itoa(port)}
	for _, o := range append(sshdOptions, "AuthorizedKeysFile="+file, "AllowUsers="+id.Name) {
		argv = append(argv, "-o", o)
	}
	s, err := NewService("sshd", argv, env, "", nil)
	s.Port = port
	return s, warn, err
}

// keyLines are the non-empty, non-comment lines of s.
func keyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// jupyterService prepares the Jupyter server: its secret (never on the
// command line: the token goes in JUPYTER_TOKEN, a hashed password in a
// config file only the user reads), and a config file in runDir/jupyter
// (on JUPYTER_CONFIG_PATH) that binds 0.0.0.0 on the port, under the base
// URL, with allow_origin, for both notebook 6 (NotebookApp) and
// jupyter_server (ServerApp).
func jupyterService(c *Jupyter, id *Identity, runDir string, env []string) (Service, error) {
	argv := c.Command
	if len(argv) == 0 {
		argv = []string{"jupyter", "lab"}
	}
	if _, err := lookPath(argv[0], env); err != nil {
		return Service{}, fmt.Errorf("jupyter is declared but %w; not starting it: install it in the image (pip jupyterlab, or apt jupyter-notebook)", err)
	}
	tokenEnv := c.TokenEnv
	if tokenEnv == "" {
		tokenEnv = DefaultJupyterTokenEnv
	}
	var sources []string
	read := func(envName, file string) (string, error) {
		if envName != "" {
			sources = append(sources, "$"+envName)
			if v := strings.TrimSpace(getenvFrom(env, envName)); v != "" {
				return v, nil
			}
		}
		if file != "" {
			sources = append(sources, file)
			b, err := os.ReadFile(file)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("reading the jupyter secret: %w", err)
			}
			return strings.TrimSpace(string(b)), nil
		}
		return "", nil
	}
	token, err := read(tokenEnv, c.TokenFile)
	if err != nil {
		return Service{}, err
	}
	password, err := read(c.PasswordEnv, c.PasswordFile)
	if err != nil {
		return Service{}, err
	}
	if token == "" && password == "" {
		return Service{}, &JupyterRefusedError{Sources: sources}
	}

	port := c.Port
	if port == 0 {
		port = DefaultJupyterPort
	}
	portEnv := c.PortEnv
	if portEnv == "" {
		portEnv = DefaultJupyterPortEnv
	}
	if v := getenvFrom(env, portEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return Service{}, fmt.Errorf("%s=%q: want a port number", portEnv, v)
		}
		port = n
	}
	baseEnv := c.BaseURLEnv
	if baseEnv == "" {
		baseEnv = DefaultJupyterBaseEnv
	}
	base := "/" + strings.Trim(getenvFrom(env, baseEnv), "/") + "/"
	if base == "//" {
		base = "/"
	}
	origin := c.AllowOrigin
	if origin == "" {
		origin = "*"
	}

	app := map[string]any{"ip": "0.0.0.0", "port": port, "base_url": base, "allow_origin": origin, "open_browser": false}
	if password != "" {
		app["password"] = password
	}
	server := map[string]any{"ServerApp": app}
	if password != "" {
		server["PasswordIdentityProvider"] = map[string]any{"hashed_password": password}
	}
	files := map[string]any{
		"jupyter_notebook_config.json": map[string]any{"NotebookApp": app},
		"jupyter_server_config.json":   server,
	}
	dir := filepath.Join(runDir, "jupyter")
	// runDir is traversable by the user (sshd's keys live there too); only
	// jupyter's own directory is closed.
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return Service{}, fmt.Errorf("creating %s: %w", runDir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return Service{}, fmt.Errorf("creating %s: %w", dir, err)
	}
	// The directory holds the password hash: it must be root's, the
	// init's or the user's (not one another user made in /tmp first).
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return Service{}, fmt.Errorf("%s is not a directory", dir)
	} else if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() && (id == nil || int(st.Uid) != id.UID) {
		return Service{}, fmt.Errorf("%s belongs to uid %d, not to the init; not writing jupyter's config there", dir, st.Uid)
	}
	if id != nil {
		if err := giveTo(dir, id); err != nil {
			return Service{}, err
		}
	}
	for name, cfg := range files {
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return Service{}, fmt.Errorf("encoding the jupyter config: %w", err)
		}
		if err := writeOwned(filepath.Join(dir, name), append(b, '\n'), id); err != nil {
			return Service{}, err
		}
	}

	senv := append([]string(nil), env...)
	if id != nil {
		senv = userEnv(senv, id)
	}
	cpath := dir
	if v := getenvFrom(env, "JUPYTER_CONFIG_PATH"); v != "" {
		cpath += ":" + v
	}
	senv = setEnv(senv, "JUPYTER_CONFIG_PATH", cpath)
	if token != "" {
		senv = setEnv(senv, "JUPYTER_TOKEN", token)
	}
	wd := ""
	if id != nil {
		wd = id.Home
	}
	s, err := NewService("jupyter", argv, senv, wd, id)
	s.Port = port
	return s, err
}

// writeOwned writes b to path, 0600, owned by id (root's when id is nil),
// replacing what was there.
func writeOwned(path string, b []byte, id *Identity) error {
	tmp := tempName(filepath.Dir(path), filepath.Base(path))
	if err := writeNewFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if id != nil {
		if err := giveTo(tmp, id); err != nil {
			_ = os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
