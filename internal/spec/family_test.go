package spec_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"imagectl/internal/spec"
)

// A spec naming the torch family without a version gets the versions
// released with its torch; a specifier that admits them is narrowed to
// them; extras and markers are kept.
func TestTorchFamilyFilledIn(t *testing.T) {
	for _, tc := range []struct {
		torch, variant string
		pip, want      []string
	}{
		{"2.6.0", "cu124", []string{"numpy", "torchvision", "TorchAudio"},
			[]string{"numpy", "torchvision==0.21.0", "TorchAudio==2.6.0"}},
		{"2.6.0", "cu124", []string{"torchvision>=0.20,<0.22", "torchaudio~=2.6.0", "torchvision==0.21.*"},
			[]string{"torchvision==0.21.0", "torchaudio==2.6.0", "torchvision==0.21.0"}},
		{"2.6.0", "cu124", []string{`torchvision[scipy]; sys_platform == "linux"`},
			[]string{`torchvision[scipy]==0.21.0; sys_platform == "linux"`}},
		{"2.11.0", "cu130", []string{"torchvision", "torchaudio==2.11.0"},
			[]string{"torchvision==0.26.0", "torchaudio==2.11.0"}},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "x.hcl")
		src := `
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  torch  = "` + tc.torch + `"
  torch_variant = "cpu"
  pip = ` + hclList(tc.pip) + `
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
`
		if tc.variant == "cu130" {
			// 2.11.0 has only the cu130 row: a CUDA image.
			src = `
image "x" {
  base   = "registry.example/base:1"
  python = "3.12"
  cuda   = "13.0"
  torch  = "` + tc.torch + `"
  driver_floor = "580.65.06"
  pip = ` + hclList(tc.pip) + `
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
`
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		imgs, err := spec.Load(context.Background(), []string{path}, spec.WithEnv(noEnv))
		if err != nil {
			t.Fatalf("torch %s, pip %q: Load = %v", tc.torch, tc.pip, err)
		}
		if got := imgs[0].Pip; !slices.Equal(got, tc.want) {
			t.Errorf("torch %s, pip %q: got %q, want %q", tc.torch, tc.pip, got, tc.want)
		}
	}
}

func hclList(ss []string) string {
	out := "["
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(s)
	}
	return out + "]"
}
