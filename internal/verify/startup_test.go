package verify

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRunStartup: WithStartup runs the firststep probe before any other
// (so a cold runtime's pull is in its time), reports the step and the
// files, and fails the check (not the run) when the step fails.
func TestRunStartup(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	files := []string{"/opt/venv/lib/python3.12/site-packages/torch/__init__.py", "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"}
	for _, tc := range []struct {
		name       string
		out        string
		err        error
		wantStatus Status
		wantFiles  int
	}{
		{"pass", mustJSON(t, map[string]any{"probe": "firststep", "device": "cuda", "import_seconds": 2.5, "step_seconds": 0.8, "files": files}), nil, Pass, 2},
		{"step failed", mustJSON(t, map[string]any{"probe": "firststep", "device": "cuda", "error": "first matmul on cuda: RuntimeError: no kernel image", "files": files}), nil, Fail, 0},
		{"probe failed", "", errors.New("exit status 1"), Fail, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := machine(t, l, 2)
			out["firststep"] = tc.out
			rt := &fakeRuntime{out: out, errs: map[string]error{"firststep": tc.err}}
			res, err := Run(context.Background(), l, WithRuntime(rt), WithGPUProber(fakeProber{h: h200s(2)}), WithImage(testRef), WithStartup(true))
			if rt.calls[0].Name != "firststep" || !rt.calls[0].GPU || strings.Join(rt.calls[0].Args, " ") != "--device cuda" {
				t.Errorf("first probe = %+v, want firststep on the GPU", rt.calls[0])
			}
			c := statuses(res)[CheckFirstStep]
			if c.Status != tc.wantStatus {
				t.Fatalf("check %s = %s (%s), want %s", CheckFirstStep, c.Status, c.Detail, tc.wantStatus)
			}
			if tc.wantStatus == Fail {
				if err == nil || res.Startup != nil {
					t.Errorf("Run() = startup %+v, err %v; want no startup and a failed run", res.Startup, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if res.Startup == nil || res.Startup.FileCount != tc.wantFiles || res.Startup.ImportSeconds != 2.5 || res.Startup.Device != "cuda" {
				t.Fatalf("Startup = %+v, want 2 files, import 2.5s on cuda", res.Startup)
			}
			text := StartupFilesText(res)
			if !strings.HasPrefix(text, "# ") || !strings.HasSuffix(text, files[1]+"\n") || strings.Count(text, "\n") != 3 {
				t.Errorf("StartupFilesText() = %q, want a comment then the 2 files", text)
			}
		})
	}
}

// TestRunNoStartup: without WithStartup there is no firststep probe and
// no startup check.
func TestRunNoStartup(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	rt := &fakeRuntime{out: machine(t, l, 2)}
	res, err := Run(context.Background(), l, WithRuntime(rt), WithGPUProber(fakeProber{h: h200s(2)}), WithImage(testRef))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := statuses(res)[CheckFirstStep]; ok || res.Startup != nil {
		t.Errorf("Run() without WithStartup has %s or a startup", CheckFirstStep)
	}
	for _, p := range rt.calls {
		if p.Name == "firststep" {
			t.Errorf("firststep ran without WithStartup")
		}
	}
}
