package spec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"imagectl/internal/initconfig"
	"imagectl/internal/logs"
	"imagectl/internal/spec"
)

const repos = `
  repos {
    staging = "registry.example/s/x"
    release = "registry.example/r/x"
  }
`

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		vars map[string]string
		env  map[string]string
		want []spec.Image
	}{{
		name: "variable default",
		src: `variable "r" { default = "registry.example" }` + "\n" + `image "x" {
base = "${var.r}/b:1"` + "\n" + `python = "3.11"` + repos + "}",
		want: []spec.Image{{Name: "x", Base: "registry.example/b:1", Python: "3.11"}},
	}, {
		name: "environment beats default",
		src: `variable "r" { default = "registry.example" }` + "\n" + `image "x" {
base = "${var.r}/b:1"` + "\n" + `python = "3.11"` + repos + "}",
		env:  map[string]string{"IMAGECTL_VAR_r": "127.0.0.1:5000"},
		want: []spec.Image{{Name: "x", Base: "127.0.0.1:5000/b:1", Python: "3.11"}},
	}, {
		name: "--var beats environment",
		src: `variable "r" { default = "registry.example" }` + "\n" + `image "x" {
base = "${var.r}/b:1"` + "\n" + `python = "3.11"` + repos + "}",
		env:  map[string]string{"IMAGECTL_VAR_r": "127.0.0.1:5000"},
		vars: map[string]string{"r": "localhost:5001"},
		want: []spec.Image{{Name: "x", Base: "localhost:5001/b:1", Python: "3.11"}},
	}, {
		name: "typed variable from the environment",
		src: `variable "pkgs" { type = list(string) }` + "\n" + `image "x" {
base = "registry.example/b:1"` + "\n" + `python = "3.11"` + "\n" + `apt = var.pkgs` + repos + "}",
		env:  map[string]string{"IMAGECTL_VAR_pkgs": `["jq", "curl"]`},
		want: []spec.Image{{Name: "x", Base: "registry.example/b:1", Python: "3.11", Apt: []string{"jq", "curl"}}},
	}, {
		name: "null default leaves the attribute unset",
		src: `variable "idx" { default = null }` + "\n" + `image "x" {
base = "registry.example/b:1"` + "\n" + `python = "3.11"` + "\n" + `torch_index = var.idx` + repos + "}",
		want: []spec.Image{{Name: "x", Base: "registry.example/b:1", Python: "3.11"}},
	}, {
		name: "defaults merge, image wins, maps merge by key",
		src: `defaults {
  python = "3.10"
  env = { A = "1", B = "1" }
  runtime {
    swappiness = 1
    storage {
      path = "/storage"
      timeout = "30s"
    }
  }
}
image "x" {
  base = "registry.example/b:1"
  python = "3.11"
  env = { B = "2" }
  runtime {
    storage {
      timeout = "2m"
    }
  }
` + repos + "}",
		want: []spec.Image{{Name: "x", Base: "registry.example/b:1", Python: "3.11", Env: map[string]string{"A": "1", "B": "2"},
			Runtime: initconfig.Config{Swappiness: ptr(1), Storage: initconfig.Storage{Path: "/storage", Timeout: initconfig.Duration(120e9)}}}},
	}, {
		name: "inherits: defaults, then parents in order, then own",
		src: `defaults {
  python = "3.10"
  env = { D = "d" }
}
image "base" {
  base = "registry.example/b:1"
  apt = ["jq"]
  env = { P = "base" }
` + repos + `}
image "extra" {
  base = "registry.example/b:2"
  pip = ["tqdm"]
  env = { P = "extra" }
` + repos + `}
image "child" {
  inherits = ["base", "extra"]
  python = "3.11"
  env = { C = "c" }
}
`,
		want: []spec.Image{
			{Name: "base", Base: "registry.example/b:1", Python: "3.10", Apt: []string{"jq"}, Env: map[string]string{"D": "d", "P": "base"}},
			{Name: "extra", Base: "registry.example/b:2", Python: "3.10", Pip: []string{"tqdm"}, Env: map[string]string{"D": "d", "P": "extra"}},
			{Name: "child", Base: "registry.example/b:2", Python: "3.11", Apt: []string{"jq"}, Pip: []string{"tqdm"}, Env: map[string]string{"D": "d", "P": "extra", "C": "c"}},
		},
	}, {
		name: "matrix with functions",
		src: `image "t" {
  matrix = {
    python = ["3.10", "3.11"]
    flavour = ["A", "B"]
  }
  name = format("t-%s-py%s", lower(flavour), replace(python, ".", ""))
  base = "registry.example/b:1"
  python = python
` + repos + "}",
		want: []spec.Image{
			{Name: "t-a-py310", Python: "3.10", Matrix: map[string]string{"flavour": "A", "python": "3.10"}},
			{Name: "t-a-py311", Python: "3.11", Matrix: map[string]string{"flavour": "A", "python": "3.11"}},
			{Name: "t-b-py310", Python: "3.10", Matrix: map[string]string{"flavour": "B", "python": "3.10"}},
			{Name: "t-b-py311", Python: "3.11", Matrix: map[string]string{"flavour": "B", "python": "3.11"}},
		},
	}, {
		name: "catalog fills the variant and pins",
		src: `image "g" {
base = "registry.example/b:1"` + "\n" + `python = "3.11"` + "\n" + `cuda = "12.4"` + "\n" + `torch = "2.6.0"` + "\n" + `driver_floor = "550.54.14"` + repos + "}",
		want: []spec.Image{{Name: "g", Base: "registry.example/b:1", Python: "3.11", CUDA: "12.4", Torch: "2.6.0", TorchVariant: "cu124",
			NCCL: "2.21.5", CUDNN: "9.1.0.70", DriverFloor: "550.54.14", Runtime: initconfig.Config{DriverFloor: "550.54.14"}}},
	}, {
		name: "cpu torch without cuda",
		src: `image "c" {
base = "registry.example/b:1"` + "\n" + `python = "3.12"` + "\n" + `torch = "2.6.0"` + repos + "}",
		want: []spec.Image{{Name: "c", Base: "registry.example/b:1", Python: "3.12", Torch: "2.6.0", TorchVariant: "cpu"}},
	}, {
		name: "platforms sorted",
		src: `image "p" {
base = "registry.example/b:1"` + "\n" + `python = "3.11"` + "\n" + `cuda = "12.6"` + "\n" + `torch = "2.6.0"` + "\n" + `driver_floor = "560.28.03"` + "\n" + `platforms = ["linux/arm64", "linux/amd64"]` + repos + "}",
		want: []spec.Image{{Name: "p", Base: "registry.example/b:1", Python: "3.11", CUDA: "12.6", Torch: "2.6.0", TorchVariant: "cu126", Platforms: []string{"linux/amd64", "linux/arm64"},
			NCCL: "2.21.5", CUDNN: "9.5.1.17", DriverFloor: "560.28.03", Runtime: initconfig.Config{DriverFloor: "560.28.03"}}},
	}, {
		name: "sizes and durations",
		src: `image "s" {
base = "registry.example/b:1"
python = "3.11"
runtime {
  min_shm = "64MB"
  caches {
    gc_max_size = 1048576
    gc_max_age = "1h30m"
  }
}
verify {
  allreduce_size = "1.5GiB"
  timeout = "10m"
}
` + repos + "}",
		want: []spec.Image{{Name: "s", Base: "registry.example/b:1", Python: "3.11",
			Runtime: initconfig.Config{MinShmBytes: 64e6, Caches: initconfig.Caches{GCMaxBytes: 1 << 20, GCMaxAge: initconfig.Duration(90 * 60e9)}},
			Verify:  spec.Verify{AllReduceBytes: 3 << 29, Timeout: initconfig.Duration(600e9)}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := spec.LoadSource(context.Background(), "t.hcl", []byte(tc.src), spec.WithVars(tc.vars), spec.WithEnv(envOf(tc.env)))
			if err != nil {
				t.Fatalf("LoadSource() = %v", err)
			}
			for i := range tc.want {
				if tc.want[i].Platforms == nil { // Load fills in the default platform
					tc.want[i].Platforms = []string{"linux/amd64"}
				}
			}
			ignore := cmpopts.IgnoreFields(spec.Image{}, "File", "Line", "Column", "Repos", "Runtime.Image")
			onlyNames := tc.want[0].Base == ""
			if onlyNames {
				ignore = cmpopts.IgnoreFields(spec.Image{}, "File", "Line", "Column", "Repos", "Runtime.Image", "Base")
			}
			if diff := cmp.Diff(tc.want, got, ignore, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("LoadSource() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestUndeclaredVar(t *testing.T) {
	_, err := spec.LoadSource(context.Background(), "t.hcl", []byte(`image "x" {
base = "r.example/b:1"`+"\n"+`python = "3.11"`+repos+"}"),
		spec.WithVars(map[string]string{"nope": "1"}), spec.WithEnv(envOf(nil)))
	var de *spec.DiagnosticsError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), `Undeclared variable "nope"`) {
		t.Errorf("LoadSource(--var nope=1) = %v, want an undeclared-variable diagnostic", err)
	}
}

func TestDuplicateNamesAcrossFiles(t *testing.T) {
	_, err := spec.Load(context.Background(), []string{"../../specs", "../../specs/demo.hcl"}, spec.WithEnv(envOf(nil)))
	if err != nil {
		t.Errorf("Load(specs, specs/demo.hcl) = %v; the same file named twice must load once", err)
	}
	dir := t.TempDir()
	for _, f := range []string{"a.hcl", "b.hcl"} {
		src := `image "same" {
base = "r.example/b:1"` + "\n" + `python = "3.11"` + repos + "}"
		if err := os.WriteFile(dir+"/"+f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = spec.Load(context.Background(), []string{dir}, spec.WithEnv(envOf(nil)))
	var de *spec.DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("Load(two files with image \"same\") = %v, want a DiagnosticsError", err)
	}
	d := de.List()[0]
	if d.File != dir+"/b.hcl" || d.Line != 1 || !strings.Contains(d.Detail, "a.hcl") {
		t.Errorf("duplicate diagnostic = %+v, want it at b.hcl:1 naming a.hcl", d)
	}
}

func TestLoadMissingPath(t *testing.T) {
	_, err := spec.Load(context.Background(), []string{"testdata/does-not-exist"})
	if err == nil || errors.As(err, new(*spec.DiagnosticsError)) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want a wrapped not-exist error", err)
	}
}

// The resolved shipped specs as JSON, against testdata/specs.golden.json.
func TestShippedGolden(t *testing.T) {
	imgs, err := spec.Load(context.Background(), []string{"../../specs"}, spec.WithEnv(envOf(nil)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(imgs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const golden = "testdata/specs.golden.json"
	if *spec.Update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("Load(specs) JSON mismatch (-want +got); run go test ./internal/spec -update:\n%s", diff)
	}
}

// TestUndeclaredVarNamesNoGoOption: the --var message speaks to the CLI
// user, not of Go options.
func TestUndeclaredVarNamesNoGoOption(t *testing.T) {
	_, err := spec.LoadSource(context.Background(), "t.hcl", []byte(`image "x" {
base = "r.example/b:1"`+"\n"+`python = "3.11"`+repos+"}"),
		spec.WithVars(map[string]string{"nope": "1"}), spec.WithEnv(envOf(nil)))
	var de *spec.DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("LoadSource(--var nope=1) = %v, want diagnostics", err)
	}
	for _, d := range de.List() {
		if strings.Contains(d.Detail, "WithVars") {
			t.Errorf("diagnostic %q names a Go option", d.Detail)
		}
	}
}

// TestNoSpecFound: an empty file, a file without image blocks and a
// directory without *.hcl files are errors that say no spec was found,
// never "0 images".
func TestNoSpecFound(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	varsOnly := filepath.Join(dir, "vars.hcl")
	emptyDir := filepath.Join(dir, "emptydir")
	for _, err := range []error{
		os.WriteFile(empty, nil, 0o644),
		os.WriteFile(varsOnly, []byte(`variable "a" { default = "1" }`+"\n"), 0o644),
		os.Mkdir(emptyDir, 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path     string
		notExist bool
	}{
		{empty, false},
		{varsOnly, false},
		{emptyDir, true},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			imgs, err := spec.Load(context.Background(), []string{tc.path}, spec.WithEnv(envOf(nil)))
			var ne *spec.NoSpecError
			if !errors.As(err, &ne) || !strings.Contains(err.Error(), "no spec found") || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("Load(%s) = %d images, %v; want a NoSpecError naming the path", tc.path, len(imgs), err)
			}
			if got := errors.Is(err, os.ErrNotExist); got != tc.notExist {
				t.Errorf("errors.Is(Load(%s), ErrNotExist) = %v, want %v", tc.path, got, tc.notExist)
			}
			if strings.Contains(err.Error(), "glob") {
				t.Errorf("Load(%s) = %v, names the glob rather than the missing spec", tc.path, err)
			}
		})
	}
}

// TestWithWarnings: warnings come back as diagnostics with their position,
// and nothing is logged.
func TestWithWarnings(t *testing.T) {
	var logged bytes.Buffer
	ctx := logs.With(context.Background(), slog.New(slog.NewTextHandler(&logged, nil)))
	src := `image "x" {
base = "r.example/b:1"
python = "3.11"
verify {
  min_busbw_gbps = 100
}` + repos + "}"
	var w spec.DiagnosticsError
	imgs, err := spec.LoadSource(ctx, "w.hcl", []byte(src), spec.WithEnv(envOf(nil)), spec.WithWarnings(&w))
	if err != nil || len(imgs) != 1 {
		t.Fatalf("LoadSource = %d images, %v", len(imgs), err)
	}
	ds := w.List()
	if len(ds) != 1 || ds[0].Severity != "warning" || ds[0].File != "w.hcl" || ds[0].Line != 5 {
		t.Errorf("WithWarnings got %+v, want one warning at w.hcl:5", ds)
	}
	if logged.Len() != 0 {
		t.Errorf("Load logged %q with WithWarnings set", logged.String())
	}
}
