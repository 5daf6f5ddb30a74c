package runtimes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/verify"
	"imagectl/internal/verify/kubernetes"
	"imagectl/internal/verify/podman"
	"imagectl/internal/verify/verifytest"
)

func TestDetect(t *testing.T) {
	noSock := func(context.Context, string) error { return errors.New("connection refused") }
	sock := func(_ context.Context, p string) error {
		if p == "/run/c.sock" {
			return nil
		}
		return errors.New("no such file")
	}
	path := func(have ...string) func(string) (string, error) {
		return func(f string) (string, error) {
			for _, h := range have {
				if h == f {
					return "/usr/bin/" + f, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	testRef := verifytest.Ref
	for _, tc := range []struct {
		name        string
		d           Detector
		withInPlace bool
		want        string
		wantErr     string
	}{
		{"containerd socket from the environment", Detector{Dial: sock, LookPath: path("podman"), Getenv: env(map[string]string{"CONTAINERD_ADDRESS": "/run/c.sock"})}, true, verify.RuntimeContainerd, ""},
		{"podman when containerd does not answer", Detector{Dial: noSock, LookPath: path("podman", "docker"), Getenv: env(nil)}, true, verify.RuntimePodman, ""},
		{"docker", Detector{Dial: noSock, LookPath: path("docker"), Getenv: env(nil)}, true, verify.RuntimeDocker, ""},
		{"in-place inside the image", Detector{Dial: noSock, LookPath: path(), Getenv: env(map[string]string{"IMAGECTL_IMAGE_DIGEST": testRef.DigestStr()})}, true, verify.RuntimeInPlace, ""},
		{"inside another image: no fallback", Detector{Dial: noSock, LookPath: path(), Getenv: env(map[string]string{"IMAGECTL_IMAGE_DIGEST": "sha256:" + strings.Repeat("0", 64)})}, true, "", "IMAGECTL_IMAGE_DIGEST is sha256:000"},
		{"nothing: no fallback", Detector{Dial: noSock, LookPath: path(), Getenv: env(nil)}, true, "", "IMAGECTL_IMAGE_DIGEST is not set"},
		{"release never detects in-place", Detector{Dial: noSock, LookPath: path(), Getenv: env(map[string]string{"IMAGECTL_IMAGE_DIGEST": testRef.DigestStr()})}, false, "", "podman on PATH, docker on PATH; name one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := tc.d.Detect(context.Background(), "", testRef, tc.withInPlace)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNoRuntime) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Detect() = %q, %v; want ErrNoRuntime containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want || reason == "" {
				t.Errorf("Detect() = %q (%q), %v; want %q with a reason", got, reason, err, tc.want)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	ctx := context.Background()
	d := verifytest.Ref
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

	t.Run("auto finds containerd", func(t *testing.T) {
		s, err := Select(ctx, "auto", WithDetector(Detector{Dial: answer, LookPath: noPath, Getenv: inImage}))
		if err != nil || s.Kind != verify.RuntimeContainerd || s.Reason == "" {
			t.Fatalf("Select(auto) = %+v, %v; want containerd with a reason", s, err)
		}
		rt, err := s.Runtime(l, d)
		if err != nil || rt.Name() != verify.RuntimeContainerd {
			t.Fatalf("Runtime() = %v, %v; want containerd", rt, err)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("auto never falls back to in-place", func(t *testing.T) {
		_, err := Select(ctx, "", WithDetector(Detector{Dial: refuse, LookPath: noPath, Getenv: inImage}))
		if !errors.Is(err, ErrNoRuntime) || exitcode.Code(err) != exitcode.VerifyNotRun {
			t.Errorf("Select(auto, nothing found) = %v (exit %d), want ErrNoRuntime, exit %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
		s, err := Select(ctx, "", WithDetector(Detector{Dial: refuse, LookPath: noPath, Getenv: inImage}), WithAutoInPlace(&d))
		if err != nil || s.Kind != verify.RuntimeInPlace {
			t.Errorf("Select(auto, inside the image, WithAutoInPlace) = %+v, %v; want in-place", s, err)
		}
	})

	t.Run("in-place when named", func(t *testing.T) {
		s, err := Select(ctx, verify.RuntimeInPlace, WithDetector(Detector{Dial: refuse, LookPath: noPath}))
		if err != nil || s.Kind != verify.RuntimeInPlace || s.Reason != "" {
			t.Fatalf("Select(in-place) = %+v, %v", s, err)
		}
		if rt, err := s.Runtime(l, d); err != nil || rt.Name() != "in-place" {
			t.Errorf("Runtime() = %v, %v; want in-place", rt, err)
		}
	})

	t.Run("a container runtime gets ready storage", func(t *testing.T) {
		s, err := Select(ctx, verify.RuntimeDocker, WithGPUs(1), WithShmSize("2g"), WithPodman(podman.WithGPUMode("docker")))
		if err != nil {
			t.Fatal(err)
		}
		rt, err := s.Runtime(l, d)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := rt.(verify.Wrapper).Unwrap().(*podman.Runtime)
		if !ok {
			t.Fatalf("Runtime() = %#v, want podman wrapped with its storage", rt)
		}
		args := p.Args("/p", verify.Probe{Script: "env.py", GPU: true})
		i := slices.Index(args, "-v")
		mounts := args[i:]
		if len(mounts) < 4 || mounts[2] != "-v" || !strings.HasSuffix(mounts[3], ":/storage") || !slices.Contains(args, "2147483648") || !slices.Contains(args, "--gpus") || p.Name() != "docker" {
			t.Fatalf("docker args %q: want a storage mount at /storage, --shm-size 2147483648, --gpus 1", args)
		}
		dir := strings.TrimSuffix(mounts[3], ":/storage")
		if _, err := os.Stat(filepath.Join(dir, ".ready")); err != nil {
			t.Errorf("the throwaway storage lacks the lock's ready file: %v", err)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("storage %s not removed on Close: %v", dir, err)
		}
		s, err = Select(ctx, verify.RuntimePodman, WithStorage("/mnt/s"))
		if err != nil {
			t.Fatal(err)
		}
		rt, err = s.Runtime(l, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, wrapped := rt.(verify.Wrapper); wrapped || !slices.Contains(rt.(*podman.Runtime).Args("/p", verify.Probe{}), "/mnt/s:/storage") {
			t.Errorf("Runtime() with --storage = %#v, want podman mounting /mnt/s", rt)
		}
	})

	t.Run("kubernetes", func(t *testing.T) {
		s, err := Select(ctx, verify.RuntimeKubernetes, WithPython("/usr/bin/python3"))
		if err != nil {
			t.Fatal(err)
		}
		if rt, err := s.Runtime(l, d); err != nil || rt.Name() != verify.RuntimeKubernetes {
			t.Errorf("Runtime() = %v, %v; want kubernetes", rt, err)
		}
		if _, ok := any(&kubernetes.Runtime{}).(verify.BatchRuntime); !ok {
			t.Errorf("the kubernetes runtime is not a verify.BatchRuntime")
		}
	})

	for _, tc := range []struct {
		name, kind string
		opts       []Option
	}{
		{"unknown kind", "lxc", nil},
		{"containerd --from", verify.RuntimeContainerd, []Option{WithFrom("oci:/x")}},
		{"kubernetes --from", verify.RuntimeKubernetes, []Option{WithFrom("oci:/x")}},
		{"bad shm size", verify.RuntimePodman, []Option{WithShmSize("lots")}},
		{"bad gpu mode", verify.RuntimePodman, []Option{WithPodman(podman.WithGPUMode("nvidia"))}},
	} {
		t.Run(tc.name+" is a usage error", func(t *testing.T) {
			_, err := Select(ctx, tc.kind, tc.opts...)
			if exitcode.Code(err) != exitcode.Usage {
				t.Errorf("Select(%s) = %v (exit %d), want exit %d", tc.kind, err, exitcode.Code(err), exitcode.Usage)
			}
		})
	}
}

func TestShmSize(t *testing.T) {
	if got := verify.ShmBytes(&lock.Lock{}); got != 1<<30 {
		t.Errorf("ShmBytes(no minimum) = %d, want 1 GiB", got)
	}
	for in, want := range map[string]int64{"1g": 1 << 30, "512m": 512 << 20, "64k": 64 << 10, "1Gi": 1 << 30, "2G": 2e9, "1048576": 1 << 20, "100b": 100} {
		if got, err := ParseShmSize(in); err != nil || got != want {
			t.Errorf("ParseShmSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1g", "lots", "0"} {
		if _, err := ParseShmSize(in); err == nil {
			t.Errorf("ParseShmSize(%q) = nil error, want one", in)
		}
	}
}
