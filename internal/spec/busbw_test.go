package spec_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/logs"
	"imagectl/internal/spec"
)

// loadWarnings loads paths and returns what Load warned about.
func loadWarnings(t *testing.T, paths ...string) string {
	t.Helper()
	var buf bytes.Buffer
	ctx := logs.With(context.Background(), slog.New(slog.NewTextHandler(&buf, nil)))
	if _, err := spec.Load(ctx, paths, spec.WithEnv(noEnv)); err != nil {
		t.Fatalf("Load(%v) = %v", paths, err)
	}
	return buf.String()
}

// TestBusBandwidthFloorNeedsTwoGPUs: a min_busbw_gbps that one GPU would
// skip is a warning at the attribute, file:line:col; min_gpus >= 2 or a
// CPU-only image is not.
func TestBusBandwidthFloorNeedsTwoGPUs(t *testing.T) {
	const head = `
image "x" {
  base   = "127.0.0.1:5000/base:1"
  python = "3.11"
  repos {
    staging = "127.0.0.1:5000/s"
    release = "127.0.0.1:5000/r"
  }
  verify {
`
	for _, tc := range []struct {
		name, verify string
		want         string // "" for no warning
	}{
		{"min_gpus unset", "    min_busbw_gbps = 100\n", "x.hcl:10,22-25: Bus bandwidth floor not enforceable"},
		{"min_gpus 1", "    min_gpus = 1\n    min_busbw_gbps = 100\n", "x.hcl:11,22-25: Bus bandwidth floor not enforceable"},
		{"min_gpus 2", "    min_gpus = 2\n    min_busbw_gbps = 100\n", ""},
		{"no floor", "    min_gpus = 1\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.hcl")
			if err := os.WriteFile(p, []byte(head+tc.verify+"  }\n}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got := loadWarnings(t, p)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("Load warned:\n%s\nwant no warning", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("Load warned:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}

// TestShippedSpecsNoWarnings: the shipped specs load without a warning.
func TestShippedSpecsNoWarnings(t *testing.T) {
	if got := loadWarnings(t, "../../specs"); got != "" {
		t.Errorf("Load(specs) warned:\n%s", got)
	}
}

// TestCUDAShippedTwiceWarning: an nvidia/cuda -runtime base under torch
// CUDA wheels is a warning at base (file:line:col); the -base flavour, or
// another image, is not.
func TestCUDAShippedTwiceWarning(t *testing.T) {
	for _, tc := range []struct {
		name, base, cuda, variant string
		want                      string
	}{
		{"runtime + cu124", "nvidia/cuda:12.4.1-runtime-ubuntu22.04", "12.4", "cu124", "x.hcl:3,17-57: CUDA shipped twice"},
		{"cudnn devel + cu118", "nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04", "11.8", "cu118", "x.hcl:3,17-62: CUDA shipped twice"},
		{"base + cu124", "nvidia/cuda:12.4.1-base-ubuntu22.04", "12.4", "cu124", ""},
		{"another base + cu124", "127.0.0.1:5000/platform/ubuntu-cuda:12.4", "12.4", "cu124", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `image "x" {
  python        = "3.11"
  base        = "` + tc.base + `"
  cuda          = "` + tc.cuda + `"
  torch         = "2.6.0"
  torch_variant = "` + tc.variant + `"
  driver_floor  = "525.60.13"
  repos {
    staging = "127.0.0.1:5000/s"
    release = "127.0.0.1:5000/r"
  }
}
`
			p := filepath.Join(t.TempDir(), "x.hcl")
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			got := loadWarnings(t, p)
			switch {
			case tc.want == "" && strings.Contains(got, "CUDA shipped twice"):
				t.Errorf("Load warned:\n%s\nwant no CUDA warning", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("Load warned:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}
