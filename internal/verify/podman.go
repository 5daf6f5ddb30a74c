package verify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/auth"
	"imagectl/internal/logs"
)

// probeMount is where the probe scripts are mounted inside the container.
const probeMount = "/imagectl-probes"

// Podman runs every probe in a fresh container of the image with podman
// (or docker: the flags used are common to both). The image's entrypoint
// (the init) stays in place, so the probes see the environment it sets.
type Podman struct {
	// Binary is the container CLI. The default is "podman".
	Binary string
	// Image is what the CLI runs: a reference (repo@sha256:...) or a
	// transport path such as oci:DIR or oci-archive:FILE.
	Image string
	// Python is the interpreter inside the image. The default is the
	// probe's (the lock's: ImagePython), else python3.
	Python string
	// GPUFlags give a probe with GPU set the host's GPUs. The default is
	// CDI, ["--device", "nvidia.com/gpu=all"]; docker takes ["--gpus", "all"].
	GPUFlags []string
	// ShmSize is --shm-size. The default is "1g".
	ShmSize string
	// Storage is a host folder mounted at StoragePath (the lock's
	// runtime.storage.path); empty mounts nothing.
	Storage     string
	StoragePath string
	// Ulimits are passed as --ulimit. The default, nofile=1024:1024 and
	// nproc=1024:1024, is what rootful podman needs on a machine without
	// CAP_SYS_RESOURCE (its default rlimits are refused there).
	Ulimits []string
	// ExtraArgs go before the image, after every other flag.
	ExtraArgs []string
	probes    probeDir
}

// Name implements Runtime.
func (r *Podman) Name() string {
	if r.Binary != "" && strings.HasSuffix(r.Binary, "docker") {
		return "docker"
	}
	return "podman"
}

// Args returns the command line that runs p (without the binary).
func (r *Podman) Args(probeDir string, p Probe) []string {
	args := []string{"run", "--rm", "--network=none"}
	ulimits := r.Ulimits
	if ulimits == nil {
		ulimits = []string{"nofile=1024:1024", "nproc=1024:1024"}
	}
	for _, u := range ulimits {
		args = append(args, "--ulimit", u)
	}
	shm := r.ShmSize
	if shm == "" {
		shm = "1g"
	}
	args = append(args, "--shm-size", shm)
	if p.GPU {
		gpu := r.GPUFlags
		if gpu == nil {
			gpu = []string{"--device", "nvidia.com/gpu=all"}
		}
		args = append(args, gpu...)
	}
	for _, e := range probeEnv(os.Getenv, r.RanDigest(), nil) {
		args = append(args, "-e", e)
	}
	args = append(args, "-v", probeDir+":"+probeMount+":ro")
	if r.Storage != "" && r.StoragePath != "" {
		args = append(args, "-v", r.Storage+":"+r.StoragePath)
	}
	if isLoopbackRegistry(r.Image) {
		args = append(args, "--tls-verify=false")
	}
	args = append(args, r.ExtraArgs...)
	py := firstNonEmpty(r.Python, p.Python, "python3")
	args = append(args, r.Image, py, probeMount+"/"+p.Script)
	return append(args, p.Args...)
}

// Exec implements Runtime.
func (r *Podman) Exec(ctx context.Context, p Probe) ([]byte, error) {
	if r.Image == "" {
		return nil, fmt.Errorf("podman runtime: no image")
	}
	dir, err := r.probes.path()
	if err != nil {
		return nil, fmt.Errorf("writing probe scripts: %w", err)
	}
	bin := r.Binary
	if bin == "" {
		bin = "podman"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return nil, &ProbeError{Probe: p.Name, Err: fmt.Errorf("container runtime: %w", err)}
	}
	// A named container: killing the CLI leaves the container running
	// (podman's conmon, dockerd), so a cancelled probe removes it by name.
	id := "imagectl-verify-" + p.Name + "-" + randomHex(4)
	args := r.Args(dir, p)
	args = append([]string{args[0], "--name", id}, args[1:]...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = registryAuthEnv(os.Environ())
	out, err := runCommand(ctx, p.Name, cmd)
	if ctx.Err() != nil {
		r.remove(ctx, bin, id)
	}
	return out, err
}

// remove force-removes the container id (killed at once, not stopped with
// a grace period), within cleanupTimeout of a context of its own.
func (r *Podman) remove(ctx context.Context, bin, id string) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	args := []string{"rm", "--force", id}
	if r.Name() == "podman" {
		args = []string{"rm", "--force", "--time", "0", "--ignore", id}
	}
	if out, err := exec.CommandContext(cctx, bin, args...).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such container") {
		logs.From(ctx).Warn("removing probe container", "id", id, "err", err, "output", strings.TrimSpace(string(out)))
	}
}

// registryAuthEnv points podman at the Docker config every other stage
// reads ($DOCKER_CONFIG/config.json or ~/.docker/config.json), through
// REGISTRY_AUTH_FILE, unless the environment already names an auth file;
// docker reads the Docker config by itself.
func registryAuthEnv(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "REGISTRY_AUTH_FILE=") {
			return env
		}
	}
	f := filepath.Join(auth.DockerConfigDir(), "config.json")
	if _, err := os.Stat(f); err != nil {
		return env
	}
	return append(env, "REGISTRY_AUTH_FILE="+f)
}

// Close implements Runtime.
func (r *Podman) Close() error { return r.probes.close() }

// RanDigest implements DigestRunner: the digest of Image when it is a
// registry reference by digest (podman and docker pull it and check the
// digest); "" for a transport path such as oci:DIR, which proves nothing
// about a digest.
func (r *Podman) RanDigest() string {
	d, err := name.NewDigest(r.Image)
	if err != nil {
		return ""
	}
	return d.DigestStr()
}

func isLoopbackRegistry(ref string) bool {
	return strings.HasPrefix(ref, "127.0.0.1:") || strings.HasPrefix(ref, "localhost:") || strings.HasPrefix(ref, "[::1]:")
}
