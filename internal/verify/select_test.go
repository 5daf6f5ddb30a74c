package verify

import (
	"context"
	"errors"
	"strings"
	"testing"

	"imagectl/internal/lock"
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
	cfg := RuntimeConfig{Image: testRef}
	for _, tc := range []struct {
		name        string
		d           Detector
		withInPlace bool
		want        string
		wantErr     string
	}{
		{"containerd socket from the environment", Detector{Dial: sock, LookPath: path("podman"), Getenv: env(map[string]string{"CONTAINERD_ADDRESS": "/run/c.sock"})}, true, RuntimeContainerd, ""},
		{"podman when containerd does not answer", Detector{Dial: noSock, LookPath: path("podman", "docker"), Getenv: env(nil)}, true, RuntimePodman, ""},
		{"docker", Detector{Dial: noSock, LookPath: path("docker"), Getenv: env(nil)}, true, RuntimeDocker, ""},
		{"in-place inside the image", Detector{Dial: noSock, LookPath: path(), Getenv: env(map[string]string{"IMAGECTL_IMAGE_DIGEST": testRef.DigestStr()})}, true, RuntimeInPlace, ""},
		{"inside another image: no fallback", Detector{Dial: noSock, LookPath: path(), Getenv: env(map[string]string{"IMAGECTL_IMAGE_DIGEST": "sha256:" + strings.Repeat("0", 64)})}, true, "", "IMAGECTL_IMAGE_DIGEST is sha256:000"},
		{"nothing: no fallback", Detector{Dial: noSock, LookPath: path(), Getenv: env(nil)}, true, "", "IMAGECTL_IMAGE_DIGEST is not set"},
		{"release never detects in-place", Detector{Dial: noSock, LookPath: path(), Getenv: env(map[string]string{"IMAGECTL_IMAGE_DIGEST": testRef.DigestStr()})}, false, "", "podman on PATH, docker on PATH; name one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := tc.d.Detect(context.Background(), cfg, tc.withInPlace)
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

func TestNewRuntime(t *testing.T) {
	l := &lock.Lock{}
	l.Runtime.MinShmBytes = 4 << 30
	l.Runtime.Storage.Path = "/storage"
	cfg := RuntimeConfig{Image: testRef, Storage: "/mnt/s", GPUs: 1, ContainerdAddress: "/run/c.sock"}

	cfg.Kind = RuntimeContainerd
	rt, err := NewRuntime(l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := rt.(*Containerd)
	if c.ShmBytes != 4<<30 || c.StoragePath != "/storage" || c.Storage != "/mnt/s" || c.GPUs != 1 || c.Address != "/run/c.sock" || c.Image != testRef {
		t.Errorf("NewRuntime(containerd) = %+v", c)
	}

	cfg.Kind, cfg.ShmSize = RuntimePodman, "2g"
	rt, err = NewRuntime(l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := rt.(*Podman)
	if p.ShmSize != "2147483648" || p.Image != testRef.String() || strings.Join(p.GPUFlags, " ") != "--device nvidia.com/gpu=0" {
		t.Errorf("NewRuntime(podman) = %+v", p)
	}

	cfg.Kind, cfg.Kubeconfig, cfg.Namespace, cfg.Keep = RuntimeKubernetes, "/k/config", "gpu-verify", true
	cfg.Job = JobConfig{StorageClaim: "cache", Iters: 7}
	rt, err = NewRuntime(l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := rt.(*Kubernetes)
	if k.Kubeconfig != "/k/config" || k.Namespace != "gpu-verify" || !k.Keep || k.Lock != l || k.Image != testRef ||
		k.Job.StorageClaim != "cache" || k.Job.Iters != 7 || k.Job.ShmSize != "2g" {
		t.Errorf("NewRuntime(kubernetes) = %+v", k)
	}

	for _, kind := range []string{RuntimeAuto, "", "lxc"} {
		cfg.Kind = kind
		if _, err := NewRuntime(l, cfg); err == nil {
			t.Errorf("NewRuntime(%q) = nil error, want one", kind)
		}
	}
	cfg.Kind, cfg.From = RuntimeContainerd, "oci:/x"
	if _, err := NewRuntime(l, cfg); err == nil {
		t.Errorf("NewRuntime(containerd, --from oci:) = nil error, want one: containerd pulls by digest")
	}
	cfg.Kind = RuntimeKubernetes
	if _, err := NewRuntime(l, cfg); err == nil {
		t.Errorf("NewRuntime(kubernetes, --from oci:) = nil error, want one: the Job runs the digest")
	}
}

func TestShmSize(t *testing.T) {
	if got := ShmBytes(&lock.Lock{}); got != 1<<30 {
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
