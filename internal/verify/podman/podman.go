// Package podman runs verification probes in containers with podman or
// docker (the flags used are common to both).
package podman

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/auth"
	"imagectl/internal/logs"
	"imagectl/internal/verify"
)

// Runtime runs every probe in a fresh container of the image with podman
// (or docker). The image's entrypoint (the init) stays in place, so the
// probes see the environment it sets.
type Runtime struct {
	o      options
	image  string
	probes verify.ProbeDir
}

// New returns the runtime that runs image: a registry reference by digest
// (repo@sha256:..., which podman and docker pull and check), or a transport
// path such as oci:DIR or oci-archive:FILE (which proves no digest).
func New(image string, opts ...Option) (*Runtime, error) {
	if image == "" {
		return nil, errors.New("podman runtime: no image")
	}
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return &Runtime{o: *o, image: image}, nil
}

// Name implements verify.Runtime.
func (r *Runtime) Name() string {
	if r.o.binary != "" && strings.HasSuffix(r.o.binary, "docker") {
		return "docker"
	}
	return "podman"
}

// Args returns the command line that runs p (without the binary).
func (r *Runtime) Args(probeDir string, p verify.Probe) []string {
	args := []string{"run", "--rm", "--network=none"}
	ulimits := r.o.ulimits
	if ulimits == nil {
		ulimits = []string{"nofile=1024:1024", "nproc=1024:1024"}
	}
	for _, u := range ulimits {
		args = append(args, "--ulimit", u)
	}
	shm := r.o.shmSize
	if shm == "" {
		shm = "1g"
	}
	args = append(args, "--shm-size", shm)
	if p.GPU {
		gpu := r.o.gpuFlags()
		if gpu == nil {
			gpu = []string{"--device", "nvidia.com/gpu=all"}
		}
		args = append(args, gpu...)
	}
	for _, e := range verify.ProbeEnv(os.Getenv, r.RanDigest(), nil) {
		args = append(args, "-e", e)
	}
	args = append(args, "-v", probeDir+":"+verify.ProbeMount+":ro")
	if r.o.storage != "" && r.o.storagePath != "" {
		args = append(args, "-v", r.o.storage+":"+r.o.storagePath)
	}
	if isLoopbackRegistry(r.image) {
		args = append(args, "--tls-verify=false")
	}
	args = append(args, r.o.extraArgs...)
	py := cmp.Or(r.o.python, p.Python, "python3")
	args = append(args, r.image, py, verify.ProbeMount+"/"+p.Script)
	return append(args, p.Args...)
}

// Exec implements verify.Execer.
func (r *Runtime) Exec(ctx context.Context, p verify.Probe) ([]byte, error) {
	dir, err := r.probes.Path()
	if err != nil {
		return nil, fmt.Errorf("writing probe scripts: %w", err)
	}
	bin := r.o.binary
	if bin == "" {
		bin = "podman"
	}
	if _, err := exec.LookPath(bin); err != nil {
		return nil, &verify.ProbeError{Probe: p.Name, Err: fmt.Errorf("container runtime: %w", err)}
	}
	// A named container: killing the CLI leaves the container running
	// (podman's conmon, dockerd), so a cancelled probe removes it by name.
	id := "imagectl-verify-" + p.Name + "-" + verify.RandomHex(4)
	args := r.Args(dir, p)
	args = append([]string{args[0], "--name", id}, args[1:]...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = registryAuthEnv(os.Environ())
	out, err := verify.RunCommand(ctx, p.Name, cmd)
	if ctx.Err() != nil {
		r.remove(ctx, bin, id)
	}
	return out, err
}

// remove force-removes the container id (killed at once, not stopped with
// a grace period), within cleanupTimeout of a context of its own.
func (r *Runtime) remove(ctx context.Context, bin, id string) {
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

// Close implements verify.Runtime.
func (r *Runtime) Close() error { return r.probes.Close() }

// Pulls implements verify.RegistryPuller: the image, which the CLI pulls
// from its registry when it is a registry reference.
func (r *Runtime) Pulls() string { return r.image }

// RanDigest implements verify.DigestRunner: the digest of Image when it is a
// registry reference by digest (podman and docker pull it and check the
// digest); "" for a transport path such as oci:DIR, which proves nothing
// about a digest.
func (r *Runtime) RanDigest() string {
	d, err := name.NewDigest(r.image)
	if err != nil {
		return ""
	}
	return d.DigestStr()
}

func isLoopbackRegistry(ref string) bool {
	return strings.HasPrefix(ref, "127.0.0.1:") || strings.HasPrefix(ref, "localhost:") || strings.HasPrefix(ref, "[::1]:")
}

// cleanupContext is ctx's values without its cancel, limited to 5 s: a
// cancelled probe's container is still removed.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}
