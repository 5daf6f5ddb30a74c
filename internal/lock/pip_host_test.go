package lock

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
}

// hostPython is the directory of the python3 TestPipOnHost uses.
var hostPython = func() string {
	if d := os.Getenv("IMAGECTL_TEST_PYTHON_DIR"); d != "" {
		return d
	}
	return "/usr/bin"
}()
