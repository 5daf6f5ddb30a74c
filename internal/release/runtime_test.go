package release

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/exitcode"
	"imagectl/internal/verify"
	"imagectl/internal/verify/podman"
	"imagectl/internal/verify/runtimes"
)

func TestSelectVerifyRuntime(t *testing.T) {
	d, err := name.NewDigest("127.0.0.1:5000/demo@sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	refuse := func(context.Context, string) error { return errors.New("connection refused") }
	inImage := func(k string) string {
		if k == "IMAGECTL_IMAGE_DIGEST" {
			return d.DigestStr()
		}
		return ""
	}
	ctx := context.Background()
	det := runtimes.WithDetector(runtimes.Detector{Dial: refuse, LookPath: noPath, Getenv: inImage})

	t.Run("auto never falls back to in-place", func(t *testing.T) {
		// Not even when the caller would allow it: a release verifies the
		// images it built, never its own.
		_, err := SelectVerifyRuntime(ctx, verify.RuntimeAuto, det, runtimes.WithAutoInPlace(&d))
		if !errors.Is(err, runtimes.ErrNoRuntime) || exitcode.Code(err) != exitcode.VerifyNotRun {
			t.Errorf("SelectVerifyRuntime(auto, nothing found) = %v (exit %d), want ErrNoRuntime, exit %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
	})

	t.Run("in-place only when named", func(t *testing.T) {
		s, err := SelectVerifyRuntime(ctx, verify.RuntimeInPlace, det)
		if err != nil || s.Kind != verify.RuntimeInPlace || s.Reason != "" {
			t.Fatalf("SelectVerifyRuntime(in-place) = %+v, %v", s, err)
		}
	})
}

// Container returns the VerifyRuntime of a container runtime named by
// binary (containerd, podman or docker), with storage as in
// SelectVerifyRuntime: what the end-to-end tests verify with.
func Container(binary, storage string, gpuFlags []string) VerifyRuntime {
	opts := []runtimes.Option{runtimes.WithStorage(storage)}
	if len(gpuFlags) > 0 && gpuFlags[0] == "--gpus" {
		opts = append(opts, runtimes.WithPodman(podman.WithGPUMode("docker")))
	}
	s, err := SelectVerifyRuntime(context.Background(), binary, opts...)
	if err != nil {
		panic(err)
	}
	return s.Runtime
}
