package runtimes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/verify"
	"imagectl/internal/verify/containerd"
)

// Detector finds the runtime that "auto" means on this host. Its fields
// default to the real host; tests replace them.
type Detector struct {
	// LookPath finds a program. The default is exec.LookPath.
	LookPath func(string) (string, error)
	// Getenv reads the environment. The default is os.Getenv.
	Getenv func(string) string
	// Dial reports whether a unix socket answers. The default dials it.
	Dial func(ctx context.Context, path string) error
}

func (d Detector) lookPath(f string) (string, error) {
	if d.LookPath != nil {
		return d.LookPath(f)
	}
	return exec.LookPath(f)
}

func (d Detector) getenv(k string) string {
	if d.Getenv != nil {
		return d.Getenv(k)
	}
	return os.Getenv(k)
}

func (d Detector) dial(ctx context.Context, path string) error {
	if d.Dial != nil {
		return d.Dial(ctx, path)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	return c.Close()
}

// ErrNoRuntime is what Detect returns when it finds no runtime.
var ErrNoRuntime = errors.New("no verification runtime found")

// Detect returns the runtime "auto" means here and why, in this order:
// containerd when its socket answers (address, $CONTAINERD_ADDRESS or
// containerd.DefaultAddress); podman, then docker, on PATH; in-place only
// when withInPlace and this process already runs inside the image (the
// platform's IMAGECTL_IMAGE_DIGEST, which the init records in its
// fingerprint, is img's digest). Anything else is ErrNoRuntime, naming what
// was looked for: auto never falls back to in-place.
func (d Detector) Detect(ctx context.Context, address string, img name.Digest, withInPlace bool) (kind, reason string, err error) {
	addr := cmp.Or(address, d.getenv("CONTAINERD_ADDRESS"), containerd.DefaultAddress)
	derr := d.dial(ctx, addr)
	if derr == nil {
		return verify.RuntimeContainerd, "containerd answers at " + addr, nil
	}
	looked := []string{fmt.Sprintf("containerd at %s (%v)", addr, derr)}
	for _, bin := range []string{verify.RuntimePodman, verify.RuntimeDocker} {
		p, err := d.lookPath(bin)
		if err == nil {
			return bin, bin + " is " + p, nil
		}
		looked = append(looked, bin+" on PATH")
	}
	if withInPlace {
		in := d.getenv("IMAGECTL_IMAGE_DIGEST")
		if in != "" && in == img.DigestStr() {
			return verify.RuntimeInPlace, "this process runs inside " + in + " (IMAGECTL_IMAGE_DIGEST)", nil
		}
		what := "IMAGECTL_IMAGE_DIGEST is not set"
		if in != "" {
			what = "IMAGECTL_IMAGE_DIGEST is " + in
		}
		looked = append(looked, "in-place inside "+cmp.Or(img.DigestStr(), "the image")+" ("+what+")")
	}
	return "", "", fmt.Errorf("%w: looked for %s; name one with --runtime", ErrNoRuntime, strings.Join(looked, ", "))
}
