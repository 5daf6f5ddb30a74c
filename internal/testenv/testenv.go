// Package testenv gives end-to-end tests the services `make up` started:
// buildkitd, the registry, the wheel index and the local Debian base.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Env is what `make up` wrote to .cache/env.
type Env struct {
	// BuildkitHost is buildkitd's address, unix:///...
	BuildkitHost string
	// Registry is the local registry, 127.0.0.1:PORT.
	Registry string
	// WheelIndex is the local wheel index, http://127.0.0.1:PORT/simple/.
	WheelIndex string
	// Base is the local Debian bookworm base image reference.
	Base string
	// DebianMirror is the Debian mirror from the machine's apt sources.
	DebianMirror string
	// Bin is the absolute path of the repository's bin/ (cosign, crane,
	// buildctl, imagectl, imagectl-init).
	Bin string
	// Root is the absolute path of the repository root.
	Root string
	// Containerd is the socket of the containerd `make up` started
	// (CONTAINERD_ADDRESS); "" when it was not started.
	Containerd string
	// WheelsDir is the directory the wheel index serves (IMAGECTL_WHEELS_DIR).
	// Tests must not change it: NewWheelIndex gives a private one.
	WheelsDir string
	// UpstreamRegistry is the "upstream" fixture registry, 127.0.0.1:PORT
	// (IMAGECTL_UPSTREAM_REGISTRY): python-less nvidia/cuda-shaped bases
	// (UpstreamCUDATags) as OCI indexes, made by hack/upstream.sh.
	UpstreamRegistry string
	// BaseMulti is the local base as an OCI index of linux/amd64 and
	// linux/arm64 (IMAGECTL_BASE_MULTI; hack/base.sh arm64); "" when
	// `make up` did not make it.
	BaseMulti string
}

// MultiBase returns BaseMulti. Without it, it fails the test under
// IMAGECTL_E2E=1 and skips it otherwise.
func (e Env) MultiBase(t testing.TB) string {
	t.Helper()
	if e.BaseMulti == "" {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatal("IMAGECTL_E2E=1 but IMAGECTL_BASE_MULTI is not set: run `make up` again (hack/base.sh arm64 makes the linux/arm64 base)")
		}
		t.Skip("end-to-end test: IMAGECTL_BASE_MULTI is not set; `make up` makes the two-platform base")
	}
	return e.BaseMulti
}

// ContainerdSocket returns Containerd. Without it, it fails the test under
// IMAGECTL_E2E=1 and skips it otherwise.
func (e Env) ContainerdSocket(t testing.TB) string {
	t.Helper()
	if e.Containerd == "" {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatal("IMAGECTL_E2E=1 but CONTAINERD_ADDRESS is not set: hack/up.sh starts containerd")
		}
		t.Skip("CONTAINERD_ADDRESS is not set: make up starts containerd")
	}
	return e.Containerd
}

// UpstreamCUDATags are the nvidia/cuda tags the upstream registry holds.
var UpstreamCUDATags = []string{"11.8.0-runtime-ubuntu22.04", "12.1.1-runtime-ubuntu22.04", "11.8.0-base-ubuntu22.04", "12.1.1-base-ubuntu22.04"}

// UpstreamCUDA returns the upstream fixture's nvidia/cuda:TAG reference.
// Without the upstream registry it fails the test under IMAGECTL_E2E=1 and
// skips it otherwise.
func (e Env) UpstreamCUDA(t testing.TB, tag string) string {
	t.Helper()
	if e.UpstreamRegistry == "" {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatal("IMAGECTL_E2E=1 but IMAGECTL_UPSTREAM_REGISTRY is not set: run `make up` again (hack/upstream.sh starts it)")
		}
		t.Skip("end-to-end test: IMAGECTL_UPSTREAM_REGISTRY is not set; `make up` starts the upstream registry")
	}
	return e.UpstreamRegistry + "/nvidia/cuda:" + tag
}

// Get returns the end-to-end environment. Without IMAGECTL_E2E=1 a missing
// service skips the test with the reason; with it, it fails the test.
func Get(t testing.TB) Env {
	t.Helper()
	root := Root()
	e := Env{
		BuildkitHost: os.Getenv("BUILDKIT_HOST"),
		Registry:     os.Getenv("IMAGECTL_REGISTRY"),
		WheelIndex:   os.Getenv("IMAGECTL_WHEEL_INDEX"),
		Base:         os.Getenv("IMAGECTL_BASE"),
		DebianMirror: os.Getenv("IMAGECTL_DEBIAN_MIRROR"),
		Bin:          filepath.Join(root, "bin"),
		Root:         root,
		WheelsDir:    os.Getenv("IMAGECTL_WHEELS_DIR"),

		UpstreamRegistry: os.Getenv("IMAGECTL_UPSTREAM_REGISTRY"),
		Containerd:       os.Getenv("CONTAINERD_ADDRESS"),
		BaseMulti:        os.Getenv("IMAGECTL_BASE_MULTI"),
	}
	missing := ""
	switch {
	case e.BuildkitHost == "":
		missing = "BUILDKIT_HOST"
	case e.Registry == "":
		missing = "IMAGECTL_REGISTRY"
	case e.WheelIndex == "":
		missing = "IMAGECTL_WHEEL_INDEX"
	case e.Base == "":
		missing = "IMAGECTL_BASE"
	}
	if missing != "" {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatalf("IMAGECTL_E2E=1 but %s is not set: run the tests through `make test` (it starts the services)", missing)
		}
		t.Skipf("end-to-end test: %s is not set; `make test` starts buildkitd, the registry and the wheel index", missing)
	}
	return e
}

// Root returns the repository root (the directory holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}
