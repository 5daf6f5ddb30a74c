package resolve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/pyindex"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// hostRunner runs a Job's script on this machine with /in, /out, /pip and
// /tmp mapped to temp directories: the real pip wheel and interpreter,
// without BuildKit. Debs are not installed; the apt step is answered from
// the host (its python3.X is the base's).
type hostRunner struct {
	t      *testing.T
	python string // directory holding the python3 to use
}

var aptPython = regexp.MustCompile(`command -v (python[0-9]+\.[0-9]+)`)

func (h hostRunner) Run(ctx context.Context, j Job) (map[string][]byte, error) {
	if j.Name == "apt resolve" {
		m := aptPython.FindStringSubmatch(j.Script)
		if m == nil {
			return nil, errors.New("host runner: the apt script looks for no python")
		}
		py := filepath.Join(h.python, m[1])
		if _, err := os.Stat(py); err != nil {
			return map[string][]byte{"apt.rc": []byte("0\n"), "python.offers": []byte("python3.99\n")}, nil
		}
		return map[string][]byte{"apt.rc": []byte("0\n"), "python.path": []byte(py + "\n")}, nil
	}
	root := h.t.TempDir()
	in, out, tmp, pip := filepath.Join(root, "in"), filepath.Join(root, "out"), filepath.Join(root, "tmp"), filepath.Join(root, "pip")
	for _, d := range []string{in, out, tmp, pip} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	for n, b := range j.Files {
		if err := os.WriteFile(filepath.Join(in, n), b, 0o644); err != nil {
			return nil, err
		}
	}
	if w := j.Resolver; w != nil {
		resp, err := http.Get(w.URL)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			return nil, fmt.Errorf("host runner: fetching %s: HTTP %d %v", w.URL, resp.StatusCode, err)
		}
		if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != w.SHA256 {
			return nil, fmt.Errorf("host runner: %s: sha256 %x, want %s", w.URL, s, w.SHA256)
		}
		if err := os.WriteFile(filepath.Join(pip, w.Filename), b, 0o644); err != nil {
			return nil, err
		}
	}
	script := strings.NewReplacer("/in/", in+"/", "/out/", out+"/", "/tmp/", tmp+"/", "/pip/", pip+"/").Replace(j.Script)
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

// hostPipWheel is Debian's pip wheel (python3-pip-whl, which hack/deps.sh
// installs): the real pip the lock resolves with.
func hostPipWheel(t *testing.T) string {
	t.Helper()
	m, _ := filepath.Glob("/usr/share/python-wheels/pip-*-py3-none-any.whl")
	if len(m) == 0 {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatal("no /usr/share/python-wheels/pip-*.whl: run make deps (python3-pip-whl)")
		}
		t.Skip("no /usr/share/python-wheels/pip-*.whl (python3-pip-whl)")
	}
	return m[len(m)-1]
}

// withPip adds the host's pip wheel to a wheelhouse index.
func withPip(t *testing.T, ix testenv.WheelIndex) testenv.WheelIndex {
	t.Helper()
	src := hostPipWheel(t)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ix.Dir, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ix.Dir, "files", filepath.Base(src)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wheelhouse.WriteIndex(ix.Dir); err != nil {
		t.Fatal(err)
	}
	return ix
}

// hostMinor is the MAJOR.MINOR of hostPython's python3.
func hostMinor(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(hostPython, "python3"), "-c", `import sys; print("%d.%d" % sys.version_info[:2])`).Output()
	if err != nil {
		t.Skipf("%s/python3: %v", hostPython, err)
	}
	return strings.TrimSpace(string(out))
}

func hostOptions(t *testing.T) *options {
	return &options{runner: hostRunner{t: t, python: hostPython}, access: auth.Default(), proxyAddr: "127.0.0.1:0", indexCache: t.TempDir()}
}

// TestPipOnHost runs the pip step's script with this machine's Debian
// python3 and pip (the same pip as the bookworm base) against a local index.
func TestPipOnHost(t *testing.T) {
	ix := withPip(t, testenv.NewWheelIndex(t,
		wheelhouse.Spec{Name: "demo-core", Version: "1.0.0"},
		wheelhouse.Spec{Name: "demo_util", Version: "1.1.0", Requires: []string{"demo-core>=1.0"}},
	))
	newer := ix.Publish(t, wheelhouse.Spec{Name: "demo-core", Version: "1.1.0"})
	o := hostOptions(t)
	img := spec.Image{Name: "host", Python: hostMinor(t)}
	routes := pyindex.Routes{Indexes: []string{ix.URL}}
	ctx := context.Background()
	run := func(ctx context.Context, constraints ...string) (*pipResult, lock.Wheel, error) {
		return resolvePip(ctx, o, img, routes, "host", nil, []string{"demo-util"}, plan{constraints: constraints})
	}

	res, resolver, err := run(ctx)
	if err != nil {
		t.Fatalf("resolvePip() = %v", err)
	}
	if len(res.Wheels) != 2 || res.Wheels[0].Name != "demo-core" || res.Wheels[0].Version != "1.1.0" || res.Wheels[1].Name != "demo-util" {
		t.Fatalf("resolvePip() wheels = %+v, want demo-core 1.1.0 and demo-util", res.Wheels)
	}
	if w := res.Wheels[0]; w.SHA256 != newer.SHA256 || w.Filename != newer.Filename || w.Index != ix.URL || !strings.HasPrefix(w.URL, strings.TrimSuffix(ix.URL, "simple/")+"files/") {
		t.Errorf("demo-core = %+v, want sha256 %s, file %s, the index %s and its upstream URL (not the proxy's)", w, newer.SHA256, newer.Filename, ix.URL)
	}
	if want := filepath.Base(hostPipWheel(t)); resolver.Filename != want || resolver.Index != ix.URL || len(resolver.SHA256) != 64 {
		t.Errorf("resolver = %+v, want %s from %s with its sha256", resolver, want, ix.URL)
	}
	if !strings.HasPrefix(res.Python, img.Python+".") || res.Path != filepath.Join(hostPython, "python"+img.Python) {
		t.Errorf("resolvePip() python = %q at %q, want %s.x at %s/python%s", res.Python, res.Path, img.Python, hostPython, img.Python)
	}
	if err := fillSizes(ctx, auth.Default(), res.Wheels); err != nil || res.Wheels[0].Size != newer.Size {
		t.Errorf("fillSizes() = %v, size %d, want %d", err, res.Wheels[0].Size, newer.Size)
	}
	if got := res.requiredBy("demo-core"); len(got) != 1 || !strings.Contains(got[0], "demo-util 1.1.0 (requested) requires demo-core>=1.0") {
		t.Errorf("requiredBy(demo-core) = %q", got)
	}

	// A constraint holds demo-core back.
	res, _, err = run(ctx, "demo-core==1.0.0")
	if err != nil {
		t.Fatalf("resolvePip(constraint) = %v", err)
	}
	if res.Wheels[0].Version != "1.0.0" {
		t.Errorf("resolvePip(constraint demo-core==1.0.0) gave demo-core %s", res.Wheels[0].Version)
	}

	// A conflict comes back in pip's words.
	_, _, err = run(ctx, "demo-core==0.9")
	var pe *PipError
	if !errors.As(err, &pe) || !strings.Contains(pe.Output, "demo-core") {
		t.Fatalf("resolvePip(impossible constraint) = %v, want a *PipError with pip's explanation", err)
	}
	t.Logf("pip said: %s", pe.Output)

	// A periphery package held back by a constraint is logged.
	ix.Publish(t, wheelhouse.Spec{Name: "demo-util", Version: "1.2.0", Requires: []string{"demo-core>=1.1"}})
	var logbuf bytes.Buffer
	lctx := logs.With(ctx, slog.New(slog.NewTextHandler(&logbuf, nil)))
	res, _, err = run(lctx, "demo-core==1.0.0")
	if err != nil {
		t.Fatalf("resolvePip(held back) = %v", err)
	}
	if v := res.Wheels[1].Version; v != "1.1.0" {
		t.Errorf("resolvePip(held back) gave demo-util %s, want 1.1.0", v)
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
	ctx := context.Background()
	pypi := withPip(t, testenv.NewWheelIndex(t))
	torch := func(version, cudnn string) wheelhouse.Spec {
		return wheelhouse.Spec{Name: "torch", Version: version, Requires: []string{
			`nvidia-nccl-cu12==2.21.5; platform_system == "Linux" and platform_machine == "x86_64"`,
			`nvidia-cudnn-cu12==` + cudnn + `; platform_system == "Linux" and platform_machine == "x86_64"`,
		}}
	}
	libs := []wheelhouse.Spec{{Name: "nvidia-nccl-cu12", Version: "2.21.5"}, {Name: "nvidia-cudnn-cu12", Version: "9.1.0.70"}, {Name: "nvidia-cudnn-cu12", Version: "9.5.1.17"}}
	f := newFixture(t)
	img := f.demo()
	img.Apt, img.Frozen, img.PipIndexes = nil, nil, []string{pypi.URL}
	img.Python = hostMinor(t)
	img.Pip = []string{"torch"}
	img.CUDA, img.Torch, img.NCCL, img.CUDNN, img.DriverFloor = "12.4", "2.6.0", "2.21.5", "9.1.0.70", "525.60.13"
	opts := []Option{WithRunner(hostRunner{t: t, python: hostPython}), WithSourceDateEpoch(0), WithIndexCache(t.TempDir())}

	base, ix := serveTorchIndex(t, "cu124", append(libs, torch("2.6.0+cu124", "9.1.0.70"))...)
	img.TorchIndex = base
	old, err := Image(ctx, img, opts...)
	if err != nil {
		t.Fatalf("Image(torch image) = %v", err)
	}
	if old.Core.Torch != "2.6.0+cu124" || old.Core.TorchVariant != "cu124" || len(old.Core.Archs) == 0 || old.Core.DriverFloor != "525.60.13" {
		t.Errorf("core = %+v, want torch 2.6.0+cu124, variant cu124, archs and the floor from the catalog", old.Core)
	}
	if got := wheelVersion(old, "nvidia-cudnn-cu12"); got != "9.1.0.70" {
		t.Errorf("locked nvidia-cudnn-cu12 %s, want the wheel's pin 9.1.0.70", got)
	}
	if want := []string{base + "whl/cu124", pypi.URL}; !slices.Equal(old.PipIndexes, want) {
		t.Errorf("pip indexes = %q, want %q", old.PipIndexes, want)
	}
	if w, _ := wheel(old, "nvidia-nccl-cu12"); w.Index != base+"whl/cu124" {
		t.Errorf("nvidia-nccl-cu12 index = %q, want the torch index", w.Index)
	}
	if old.Resolver.Name != "pip" || old.Resolver.Index != pypi.URL || old.Resolver.Size <= 0 {
		t.Errorf("resolver = %+v, want pip from %s with its size", old.Resolver, pypi.URL)
	}
	if old.Python.Provider != "base" || old.Python.Path != filepath.Join(hostPython, "python"+img.Python) {
		t.Errorf("python = %+v, want the base's python%s", old.Python, img.Python)
	}

	ix.Publish(t, torch("2.7.0+cu124", "9.1.0.70"))
	up, err := Upgrade(ctx, img, old, opts...)
	if err != nil {
		t.Fatalf("Upgrade() = %v", err)
	}
	if got := wheelVersion(up, "torch"); got != "2.6.0+cu124" {
		t.Errorf("Upgrade() moved torch to %s; the frozen core must stay at 2.6.0+cu124", got)
	}

	base2, _ := serveTorchIndex(t, "cu124", append(libs, torch("2.6.0+cu124", "9.5.1.17"))...)
	img.TorchIndex = base2
	_, err = Image(ctx, img, opts...)
	if want := "torch 2.6.0+cu124 pins nvidia-cudnn-cu12==9.5.1.17, the spec's cudnn is 9.1.0.70"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Image(torch with another cuDNN pin) = %v, want an error containing %q", err, want)
	}
}
