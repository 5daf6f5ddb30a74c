package verify

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCUDAToolkitCheck: the lock's core.cuda is checked against every
// source the image has; a disagreement fails naming both versions; an
// image without a toolkit is a skip that says so.
func TestCUDAToolkitCheck(t *testing.T) {
	full := cudaToolkitOut{Env: "12.1.1", VersionJSON: "12.1.1", CudartDeb: []string{"cuda-cudart-12-1", "12.1.105-1"}}
	for _, tc := range []struct {
		name   string
		want   string
		have   cudaToolkitOut
		status Status
		detail []string // substrings
	}{
		{"all three agree", "12.1", full, Pass, []string{"12.1.1 (CUDA_VERSION)", "12.1.105-1 (deb cuda-cudart-12-1)"}},
		{"lock another toolkit", "12.8", full, Fail, []string{"lock has CUDA toolkit 12.8", "12.1.1 (CUDA_VERSION)", "12.1.1 (/usr/local/cuda/version.json)", "12.1.105-1 (deb cuda-cudart-12-1)"}},
		{"env only, the upstream shape", "13.0", cudaToolkitOut{Env: "12.1.1"}, Fail, []string{"lock has CUDA toolkit 13.0, image has 12.1.1 (CUDA_VERSION)"}},
		{"deb disagrees with env", "12.1", cudaToolkitOut{Env: "12.1.1", CudartDeb: []string{"cuda-cudart-12-4", "12.4.127-1"}}, Fail, []string{"image has 12.4.127-1 (deb cuda-cudart-12-4)"}},
		{"no toolkit", "12.1", cudaToolkitOut{}, Skip, []string{"the base has no CUDA toolkit", "core.cuda is 12.1"}},
		{"lock names none", "", full, Skip, []string{"the lock names no CUDA toolkit", "12.1.1 (CUDA_VERSION)"}},
		{"unreadable version.json", "12.1", cudaToolkitOut{VersionJSONError: "/usr/local/cuda/version.json: Expecting value"}, Fail, []string{"cannot be read", "version.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cudaToolkitCheck(tc.want, tc.have)
			if c.Name != "cuda.toolkit" || c.Status != tc.status {
				t.Errorf("cudaToolkitCheck(%q, %+v) = %s %s, want cuda.toolkit %s", tc.want, tc.have, c.Name, c.Status, tc.status)
			}
			for _, s := range tc.detail {
				if !strings.Contains(c.Detail, s) {
					t.Errorf("cudaToolkitCheck(%q, %+v).Detail = %q, want it to name %q", tc.want, tc.have, c.Detail, s)
				}
			}
		})
	}
}

// TestEnvProbeCUDAToolkit runs probes/env.py with the machine's python3
// over an nvidia/cuda-shaped file system (version.json and a dpkg status
// with cuda-cudart-12-1, as NVIDIA's runtime images have them) and over a
// plain one.
func TestEnvProbeCUDAToolkit(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("no python3 to run the probe: %v", err)
	}
	cudaRoot := t.TempDir()
	write := func(root, p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(cudaRoot, "usr/local/cuda/version.json", `{"cuda": {"name": "CUDA SDK", "version": "12.1.1"}, "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "12.1.105"}}`)
	write(cudaRoot, "var/lib/dpkg/status", "Package: libc6\nStatus: install ok installed\nVersion: 2.35-0ubuntu3.8\nDescription: GNU C Library\n shared libraries\n\n"+
		"Package: cuda-cudart-11-8\nStatus: deinstall ok config-files\nVersion: 11.8.89-1\n\n"+
		"Package: cuda-cudart-12-1\nStatus: install ok installed\nArchitecture: amd64\nVersion: 12.1.105-1\nDescription: CUDA Runtime native Libraries\n")
	plainRoot := t.TempDir()
	write(plainRoot, "var/lib/dpkg/status", "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\n")
	script, err := probeFS.ReadFile("probes/env.py")
	if err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(t.TempDir(), "env.py")
	if err := os.WriteFile(sp, script, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(root, cudaVersion string) cudaToolkitOut {
		t.Helper()
		cmd := exec.CommandContext(context.Background(), py, sp, "--root", root)
		cmd.Env = append(os.Environ(), "CUDA_VERSION="+cudaVersion)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("env.py --root %s: %v", root, err)
		}
		var e envOut
		if err := parseProbe("env", out, &e); err != nil {
			t.Fatal(err)
		}
		return e.CUDAToolkit
	}
	got := run(cudaRoot, "12.1.1")
	if got.Env != "12.1.1" || got.VersionJSON != "12.1.1" || len(got.CudartDeb) != 2 || got.CudartDeb[0] != "cuda-cudart-12-1" || got.CudartDeb[1] != "12.1.105-1" {
		t.Errorf("env.py on the nvidia/cuda-shaped root: cuda_toolkit = %+v", got)
	}
	if c := cudaToolkitCheck("12.1", got); c.Status != Pass {
		t.Errorf("cuda.toolkit for lock 12.1 = %s (%s), want pass", c.Status, c.Detail)
	}
	if c := cudaToolkitCheck("13.0", got); c.Status != Fail {
		t.Errorf("cuda.toolkit for lock 13.0 = %s (%s), want fail", c.Status, c.Detail)
	}
	plain := run(plainRoot, "")
	if c := cudaToolkitCheck("12.1", plain); c.Status != Skip || !strings.Contains(c.Detail, "the base has no CUDA toolkit") {
		t.Errorf("cuda.toolkit on a plain Debian root = %s %q (from %+v), want the no-toolkit skip", c.Status, c.Detail, plain)
	}
}
