package lock

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/logs"
	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// hostRunner runs a Job's script on this machine with /in, /out and /tmp
// mapped to temp directories: the real pip, without BuildKit. Debs are not
// installed.
type hostRunner struct {
	t      *testing.T
	python string // directory holding the python3 to use
}

func (h hostRunner) Run(ctx context.Context, j Job) (map[string][]byte, error) {
	root := h.t.TempDir()
	in, out, tmp := filepath.Join(root, "in"), filepath.Join(root, "out"), filepath.Join(root, "tmp")
	for _, d := range []string{in, out, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	for n, b := range j.Files {
		if err := os.WriteFile(filepath.Join(in, n), b, 0o644); err != nil {
			return nil, err
		}
	}
	script := strings.NewReplacer("/in/", in+"/", "/out/", out+"/", "/tmp/", tmp+"/").Replace(j.Script)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = []string{"HOME=" + tmp, "LC_ALL=C.UTF-8", "PATH=" + h.python + ":/usr/bin:/bin", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1"}
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, errors.New(string(b))
	}
	files := map[string][]byte{}
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[d.Name()] = b
		return err
	})
	return files, err
}

// TestPipOnHost runs the pip step's script with this machine's Debian
// python3 and pip (the same pip as the bookworm base) against a local index.
func TestPipOnHost(t *testing.T) {
	if err := exec.Command(filepath.Join(hostPython, "python3"), "-m", "pip", "--version").Run(); err != nil {
		t.Skipf("%s/python3 has no pip: %v", hostPython, err)
	}
	ix := testenv.NewWheelIndex(t,
		wheelhouse.Spec{Name: "demo-core", Version: "1.0.0"},
		wheelhouse.Spec{Name: "demo_util", Version: "1.1.0", Requires: []string{"demo-core>=1.0"}},
	)
	newer := ix.Publish(t, wheelhouse.Spec{Name: "demo-core", Version: "1.1.0"})
	r := hostRunner{t: t, python: hostPython}
	ctx := context.Background()

	res, err := runPip(ctx, r, "host", nil, pipRequest{Requirements: []string{"demo-util"}, Indexes: []string{ix.URL}}, false)
	if err != nil {
		t.Fatalf("runPip() = %v", err)
	}
	if len(res.Wheels) != 2 || res.Wheels[0].Name != "demo-core" || res.Wheels[0].Version != "1.1.0" || res.Wheels[1].Name != "demo-util" {
		t.Fatalf("runPip() wheels = %+v, want demo-core 1.1.0 and demo-util", res.Wheels)
	}
	if res.Wheels[0].SHA256 != newer.SHA256 || res.Wheels[0].Filename != newer.Filename {
		t.Errorf("demo-core = %+v, want sha256 %s and file %s from the index", res.Wheels[0], newer.SHA256, newer.Filename)
	}
	if !strings.HasPrefix(res.Python, "3.") {
		t.Errorf("runPip() python = %q, want 3.x", res.Python)
	}
	if err := fillSizes(ctx, http.DefaultClient, nil, res.Wheels); err != nil || res.Wheels[0].Size != newer.Size {
		t.Errorf("fillSizes() = %v, size %d, want %d", err, res.Wheels[0].Size, newer.Size)
	}
	if got := res.requiredBy("demo-core"); len(got) != 1 || !strings.Contains(got[0], "demo-util 1.1.0 (requested) requires demo-core>=1.0") {
		t.Errorf("requiredBy(demo-core) = %q", got)
	}

	// A constraint holds demo-core back.
	res, err = runPip(ctx, r, "host", nil, pipRequest{Requirements: []string{"demo-util"}, Constraints: []string{"demo-core==1.0.0"}, Indexes: []string{ix.URL}}, false)
	if err != nil {
		t.Fatalf("runPip(constraint) = %v", err)
	}
	if res.Wheels[0].Version != "1.0.0" {
		t.Errorf("runPip(constraint demo-core==1.0.0) gave demo-core %s", res.Wheels[0].Version)
	}

	// A conflict comes back in pip's words.
	_, err = runPip(ctx, r, "host", nil, pipRequest{Requirements: []string{"demo-util"}, Constraints: []string{"demo-core==0.9"}, Indexes: []string{ix.URL}}, false)
	var pe *PipError
	if !errors.As(err, &pe) || !strings.Contains(pe.Output, "demo-core") {
		t.Fatalf("runPip(impossible constraint) = %v, want a *PipError with pip's explanation", err)
	}
	t.Logf("pip said: %s", pe.Output)

	// A periphery package held back by a constraint is logged.
	ix.Publish(t, wheelhouse.Spec{Name: "demo-util", Version: "1.2.0", Requires: []string{"demo-core>=1.1"}})
	var logbuf bytes.Buffer
	lctx := logs.With(ctx, slog.New(slog.NewTextHandler(&logbuf, nil)))
	res, err = runPip(lctx, r, "host", nil, pipRequest{Requirements: []string{"demo-util"}, Constraints: []string{"demo-core==1.0.0"}, Indexes: []string{ix.URL}}, false)
	if err != nil {
		t.Fatalf("runPip(held back) = %v", err)
	}
	if v := res.Wheels[1].Version; v != "1.1.0" {
		t.Errorf("runPip(held back) gave demo-util %s, want 1.1.0", v)
	}
	if !strings.Contains(logbuf.String(), "package=demo-util locked=1.1.0 newest_seen=1.2.0") {
		t.Errorf("log = %q, want a warning that pip held demo-util at 1.1.0 below 1.2.0", logbuf.String())
	}
}

// hostPython is the directory of the python3 TestPipOnHost uses.
var hostPython = func() string {
	if d := os.Getenv("IMAGECTL_TEST_PYTHON_DIR"); d != "" {
		return d
	}
	return "/usr/bin"
}()

// torchIndex serves a wheelhouse index under /whl/<variant>/ as the PyTorch
// index lays itself out, and returns the spec's torch_index base URL.
func serveTorchIndex(t *testing.T, variant string, specs ...wheelhouse.Spec) (base string, ix testenv.WheelIndex) {
	t.Helper()
	ix = testenv.NewWheelIndex(t, specs...)
	h := wheelhouse.Handler(ix.Dir)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/whl/"+variant+"/"); ok {
			r.URL.Path = "/simple/" + rest
		} else if rest, ok := strings.CutPrefix(r.URL.Path, "/whl/files/"); ok {
			r.URL.Path = "/files/" + rest
		}
		r.URL.RawPath = ""
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/", ix
}

// TestTorchOnHost locks a CUDA torch image with the embedded catalog and
// the real pip against stand-in torch and nvidia-* wheels: the core comes
// from the catalog and the wheel, a newer torch stays out of an upgrade,
// and a wheel whose cuDNN pin differs from the spec's fails naming both.
func TestTorchOnHost(t *testing.T) {
	if err := exec.Command(filepath.Join(hostPython, "python3"), "-m", "pip", "--version").Run(); err != nil {
		t.Skipf("%s/python3 has no pip: %v", hostPython, err)
	}
	ctx := context.Background()
	torch := func(version, cudnn string) wheelhouse.Spec {
		return wheelhouse.Spec{Name: "torch", Version: version, Requires: []string{
			`nvidia-nccl-cu12==2.21.5; platform_system == "Linux" and platform_machine == "x86_64"`,
			`nvidia-cudnn-cu12==` + cudnn + `; platform_system == "Linux" and platform_machine == "x86_64"`,
		}}
	}
	libs := []wheelhouse.Spec{{Name: "nvidia-nccl-cu12", Version: "2.21.5"}, {Name: "nvidia-cudnn-cu12", Version: "9.1.0.70"}, {Name: "nvidia-cudnn-cu12", Version: "9.5.1.17"}}
	f := newFixture(t)
	img := f.demo()
	img.Apt, img.Frozen, img.PipIndexes = nil, nil, nil
	img.Pip = []string{"torch"}
	img.CUDA, img.Torch, img.NCCL, img.CUDNN, img.DriverFloor = "12.4", "2.6.0", "2.21.5", "9.1.0.70", "525.60.13"
	opts := []Option{WithRunner(hostRunner{t: t, python: hostPython}), WithSourceDateEpoch(0)}

	base, ix := serveTorchIndex(t, "cu124", append(libs, torch("2.6.0+cu124", "9.1.0.70"))...)
	img.TorchIndex = base
	old, err := Resolve(ctx, img, opts...)
	if err != nil {
		t.Fatalf("Resolve(torch image) = %v", err)
	}
	if old.Core.Torch != "2.6.0+cu124" || old.Core.TorchVariant != "cu124" || len(old.Core.Archs) == 0 || old.Core.DriverFloor != "525.60.13" {
		t.Errorf("core = %+v, want torch 2.6.0+cu124, variant cu124, archs and the floor from the catalog", old.Core)
	}
	if got := version(old, "nvidia-cudnn-cu12"); got != "9.1.0.70" {
		t.Errorf("locked nvidia-cudnn-cu12 %s, want the wheel's pin 9.1.0.70", got)
	}
	if want := base + "whl/cu124"; len(old.PipIndexes) != 1 || old.PipIndexes[0] != want {
		t.Errorf("pip indexes = %q, want [%q]", old.PipIndexes, want)
	}

	ix.Publish(t, torch("2.7.0+cu124", "9.1.0.70"))
	up, err := Upgrade(ctx, img, old, opts...)
	if err != nil {
		t.Fatalf("Upgrade() = %v", err)
	}
	if got := version(up, "torch"); got != "2.6.0+cu124" {
		t.Errorf("Upgrade() moved torch to %s; the frozen core must stay at 2.6.0+cu124", got)
	}

	base2, _ := serveTorchIndex(t, "cu124", append(libs, torch("2.6.0+cu124", "9.5.1.17"))...)
	img.TorchIndex = base2
	_, err = Resolve(ctx, img, opts...)
	if want := "torch 2.6.0+cu124 pins nvidia-cudnn-cu12==9.5.1.17, the spec's cudnn is 9.1.0.70"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Resolve(torch with another cuDNN pin) = %v, want an error containing %q", err, want)
	}
}
