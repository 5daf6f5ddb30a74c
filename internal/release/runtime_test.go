package release

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/verify"
)

func TestSelectVerifyRuntime(t *testing.T) {
	d, err := name.NewDigest("127.0.0.1:5000/demo@sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	l := &lock.Lock{Name: "demo"}
	l.Runtime.Storage.Path = "/storage"
	l.Runtime.Storage.ReadyFile = "/storage/.ready"
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	refuse := func(context.Context, string) error { return errors.New("connection refused") }
	answer := func(context.Context, string) error { return nil }
	inImage := func(k string) string {
		if k == "IMAGECTL_IMAGE_DIGEST" {
			return d.DigestStr()
		}
		return ""
	}
	ctx := context.Background()

	t.Run("auto finds containerd", func(t *testing.T) {
		fn, kind, why, err := SelectVerifyRuntime(ctx, verify.Detector{Dial: answer, LookPath: noPath, Getenv: inImage}, verify.RuntimeConfig{Kind: "auto"})
		if err != nil || kind != verify.RuntimeContainerd || why == "" {
			t.Fatalf("SelectVerifyRuntime(auto) = %q %q %v, want containerd with a reason", kind, why, err)
		}
		rt, err := fn(l, d)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := rt.(interface{ Unwrap() verify.Runtime }).Unwrap().(*verify.Containerd)
		if !ok || c.Image != d || c.StoragePath != "/storage" {
			t.Fatalf("runtime = %#v, want containerd for %s at /storage", rt, d)
		}
		if _, err := os.Stat(filepath.Join(c.Storage, ".ready")); err != nil {
			t.Errorf("the throwaway storage lacks the lock's ready file: %v", err)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(c.Storage); !os.IsNotExist(err) {
			t.Errorf("storage %s not removed on Close: %v", c.Storage, err)
		}
	})

	t.Run("auto never falls back to in-place", func(t *testing.T) {
		_, _, _, err := SelectVerifyRuntime(ctx, verify.Detector{Dial: refuse, LookPath: noPath, Getenv: inImage}, verify.RuntimeConfig{})
		if !errors.Is(err, verify.ErrNoRuntime) || exitcode.Code(err) != exitcode.VerifyNotRun {
			t.Errorf("SelectVerifyRuntime(auto, nothing found) = %v (exit %d), want ErrNoRuntime, exit %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
	})

	t.Run("in-place only when named", func(t *testing.T) {
		fn, kind, why, err := SelectVerifyRuntime(ctx, verify.Detector{Dial: refuse, LookPath: noPath}, verify.RuntimeConfig{Kind: "in-place"})
		if err != nil || kind != verify.RuntimeInPlace || why != "" {
			t.Fatalf("SelectVerifyRuntime(in-place) = %q %q %v", kind, why, err)
		}
		if rt, err := fn(l, d); err != nil || rt.Name() != "in-place" {
			t.Errorf("runtime = %v, %v; want in-place", rt, err)
		}
	})

	t.Run("unknown kind is a usage error", func(t *testing.T) {
		_, _, _, err := SelectVerifyRuntime(ctx, verify.Detector{}, verify.RuntimeConfig{Kind: "lxc"})
		if exitcode.Code(err) != exitcode.Usage {
			t.Errorf("SelectVerifyRuntime(lxc) = %v (exit %d), want exit %d", err, exitcode.Code(err), exitcode.Usage)
		}
	})
}

// Container returns the VerifyRuntime of a container runtime named by
// binary (containerd, podman or docker), with storage as in
// SelectVerifyRuntime: what the end-to-end tests verify with.
func Container(binary, storage string, gpuFlags []string) VerifyRuntime {
	base := verify.RuntimeConfig{Kind: binary, Storage: storage}
	if len(gpuFlags) > 0 && gpuFlags[0] == "--gpus" {
		base.GPUMode = "docker"
	}
	return forKind(base)
}
