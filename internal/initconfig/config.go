// Package initconfig is the contract between the build and the image's init:
// the runtime config that the spec's runtime block becomes, that the lock
// records, that the build bakes into the image at Path, and that the init
// (internal/runtime, cmd/imagectl-init) reads at container start.
//
// The build side (internal/spec, internal/lock, internal/build) and the init
// both import it, so neither depends on the other's implementation. Like the
// init, it imports the standard library only (cmd/imagectl-init's
// depcheck_test.go holds it to that).
package initconfig

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Path is where the build bakes the runtime config into the image.
const Path = "/etc/imagectl/runtime.json"

// InitPath is where the build installs the init binary: the image's
// entrypoint.
const InitPath = "/usr/local/bin/imagectl-init"

// VenvPath is the Python virtual environment every wheel goes into: the
// build creates it, the SBOM reads its METADATA and the verifier's probes
// run its python.
const VenvPath = "/opt/venv"

// Config is the runtime config baked into the image from the spec's runtime
// block (through the lock). Zero values mean "off" or "use the default"
// as documented on each field.
type Config struct {
	// Storage is the persistent storage the init waits for.
	Storage Storage `json:"storage"`
	// Swappiness, when set, is written to /proc/sys/vm/swappiness.
	Swappiness *int `json:"swappiness,omitempty"`
	// MinShmBytes is the smallest /dev/shm the workload needs; 0 skips the check.
	MinShmBytes int64 `json:"min_shm_bytes,omitempty"`
	// ShmPath is the shared-memory mount to measure and enlarge. The default
	// is /dev/shm.
	ShmPath string `json:"shm_path,omitempty"`
	// TmpDir is exported as TMPDIR (created 0775). Empty leaves TMPDIR alone.
	TmpDir string `json:"tmpdir,omitempty"`
	// Caches are the compile/model cache locations exported to the workload.
	Caches Caches `json:"caches"`
	// DriverFloor is the lowest NVIDIA driver version the image supports.
	DriverFloor string `json:"driver_floor,omitempty"`
	// DriverPolicy is "fail" or "warn" (the default) when the driver is
	// below DriverFloor.
	DriverPolicy string `json:"driver_policy,omitempty"`
	// FingerprintPath is where the environment fingerprint is written; empty
	// disables it.
	FingerprintPath string `json:"fingerprint_path,omitempty"`
	// GracePeriod, when set, turns escalation on: the init kills the
	// command's process group (SIGKILL) this long after it forwarded a
	// SIGTERM or SIGINT. The default (0) never kills: the init waits as long
	// as the command lives and the orchestrator owns the deadline.
	GracePeriod Duration `json:"grace_period,omitempty"`
	// Quiet suppresses the one-line summary on the happy path.
	Quiet bool `json:"quiet,omitempty"`
	// User, when set, is the user the command and the services that do not
	// need root run as: the init does root's work first, then switches.
	User *User `json:"user,omitempty"`
	// SSH, when set, has the init run and supervise sshd (keys only).
	SSH *SSH `json:"ssh,omitempty"`
	// Jupyter, when set, has the init run and supervise a Jupyter server
	// (token or hashed password required).
	Jupyter *Jupyter `json:"jupyter,omitempty"`
	// Image describes the image the init runs in (from the lock), for the
	// fingerprint and the driver message.
	Image ImageFacts `json:"image"`
}

// Storage says what persistent storage to wait for.
type Storage struct {
	// Path is the mount point of the persistent storage, e.g. /storage.
	Path string `json:"path,omitempty"`
	// ReadyFile is a file whose existence means the storage is ready, e.g.
	// /storage/.ready.
	ReadyFile string `json:"ready_file,omitempty"`
	// Timeout is how long to wait. The default is 60s.
	Timeout Duration `json:"timeout,omitempty"`
	// Required makes a timeout fatal (exit 75); otherwise the init warns
	// and falls back to local paths.
	Required bool `json:"required,omitempty"`
}

// On returns p relative to the storage's Path (the file's place on the
// volume mounted there), and whether p is under it. An empty p or Path is
// under nothing.
func (s Storage) On(p string) (string, bool) {
	if p == "" || s.Path == "" {
		return "", false
	}
	rel, ok := strings.CutPrefix(p, strings.TrimSuffix(s.Path, "/")+"/")
	return rel, ok && rel != ""
}

// Caches are cache directories, usually on storage.
type Caches struct {
	Inductor string `json:"inductor,omitempty"` // TORCHINDUCTOR_CACHE_DIR
	Triton   string `json:"triton,omitempty"`   // TRITON_CACHE_DIR
	TensorRT string `json:"tensorrt,omitempty"` // the TensorRT engine/timing cache
	HF       string `json:"hf,omitempty"`       // HF_HOME
	CUDA     string `json:"cuda,omitempty"`     // CUDA_CACHE_PATH
	// GCMaxAge removes cache entries not modified for longer than this; 0 keeps them.
	GCMaxAge Duration `json:"gc_max_age,omitempty"`
	// GCMaxBytes trims the compile caches, oldest first, to this total; 0 is unlimited.
	GCMaxBytes int64 `json:"gc_max_bytes,omitempty"`
}

// User is the user the workload runs as.
type User struct {
	// Name is the login name (USER, LOGNAME; the only user sshd admits).
	Name string `json:"name"`
	// UID and GID are the numeric user and primary group.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Home is HOME. The default is /home/<name>.
	Home string `json:"home,omitempty"`
}

// HomeDir is u's home: Home, or /home/<name>.
func (u User) HomeDir() string {
	if u.Home != "" {
		return u.Home
	}
	return "/home/" + u.Name
}

// SSH configures the sshd the init supervises. Logins are by key only:
// password, keyboard-interactive and root logins are off.
type SSH struct {
	// Port is the port sshd listens on. The default is 22.
	Port int `json:"port,omitempty"`
	// AuthorizedKeysFile is a (mounted) file of public keys for the user.
	AuthorizedKeysFile string `json:"authorized_keys_file,omitempty"`
	// AuthorizedKeysEnv names an environment variable holding public keys,
	// one a line. Keys from both sources are used.
	AuthorizedKeysEnv string `json:"authorized_keys_env,omitempty"`
}

// Jupyter configures the Jupyter server the init supervises.
type Jupyter struct {
	// Command is the server's command. The default is ["jupyter", "lab"].
	Command []string `json:"command,omitempty"`
	// Port is the port when PortEnv is unset. The default is 8888.
	Port int `json:"port,omitempty"`
	// PortEnv names the variable a platform sets the port in. The
	// default is NB_PORT.
	PortEnv string `json:"port_env,omitempty"`
	// BaseURLEnv names the variable holding the URL prefix the server
	// answers under (Kubeflow's NB_PREFIX). The default is NB_PREFIX.
	BaseURLEnv string `json:"base_url_env,omitempty"`
	// TokenEnv and TokenFile give the access token (TokenEnv defaults to
	// JUPYTER_TOKEN); PasswordEnv and PasswordFile a hashed password
	// (jupyter's passwd() output). One of them must yield a value, or the
	// init refuses to start the server.
	TokenEnv     string `json:"token_env,omitempty"`
	TokenFile    string `json:"token_file,omitempty"`
	PasswordEnv  string `json:"password_env,omitempty"`
	PasswordFile string `json:"password_file,omitempty"`
	// AllowOrigin is the server's allow_origin (the CORS header). The
	// default is "*", as Kubeflow's notebook images set it.
	AllowOrigin string `json:"allow_origin,omitempty"`
}

// ImageFacts are the locked facts of the image, for the fingerprint.
type ImageFacts struct {
	Name       string `json:"name,omitempty"`
	CUDA       string `json:"cuda,omitempty"`
	Torch      string `json:"torch,omitempty"`
	Python     string `json:"python,omitempty"`
	NCCL       string `json:"nccl,omitempty"`
	CUDNN      string `json:"cudnn,omitempty"`
	LockDigest string `json:"lock_digest,omitempty"`
}

// Duration is a time.Duration that reads and writes as a Go duration string
// ("90s", "5m").
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("parsing duration %q: %w", s, err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }
