package runtime

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func checkByName(r Report, name string) Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{}
}

func TestDiagnose(t *testing.T) {
	for _, tc := range []struct {
		name       string
		version    string
		minors     []int
		nodes      []int
		floor      string
		wantStatus string
		wantFound  string
	}{
		{name: "healthy", version: "580.159.04", minors: []int{0, 1}, nodes: []int{0, 1}, floor: "525.60.13", wantStatus: StatusOK, wantFound: "2 GPU(s)"},
		{name: "below floor", version: "470.239.06", minors: []int{0}, nodes: []int{0}, floor: "525.60.13", wantStatus: StatusFail, wantFound: "below this image's floor 525.60.13"},
		{name: "no device nodes", version: "580.159.04", minors: []int{0, 1}, nodes: []int{0}, floor: "525.60.13", wantStatus: StatusFail, wantFound: "missing device nodes: /dev/nvidia1"},
		{name: "no driver", floor: "525.60.13", wantStatus: StatusFail, wantFound: "no NVIDIA driver"},
		{name: "no driver cpu image", wantStatus: StatusSkip, wantFound: "no NVIDIA driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc, dev := fakeGPUHost(t, tc.version, tc.minors, tc.nodes)
			fakeMounts(t, proc, "")
			cfg := Config{DriverFloor: tc.floor, ShmPath: t.TempDir()}
			r, err := Diagnose(context.Background(), cfg, nil, WithProcRoot(proc), WithDevRoot(dev), WithTmpRoot(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			c := checkByName(r, "gpu")
			if c.Status != tc.wantStatus || !strings.Contains(c.Found, tc.wantFound) {
				t.Errorf("gpu check = %+v, want status %s, found containing %q", c, tc.wantStatus, tc.wantFound)
			}
			if c.Status == StatusFail && c.Fix == "" {
				t.Errorf("failed gpu check has no fix")
			}
		})
	}
}

func TestDiagnoseStorageAndShm(t *testing.T) {
	proc := t.TempDir()
	fakeMounts(t, proc, "")
	root := t.TempDir()
	cfg := Config{
		Storage:     Storage{Path: filepath.Join(root, "storage")},
		MinShmBytes: 1 << 50, // more than any test machine has
		ShmPath:     root,
	}
	r, err := Diagnose(context.Background(), cfg, nil, WithProcRoot(proc), WithDevRoot(t.TempDir()), WithTmpRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if c := checkByName(r, "storage"); c.Status != StatusFail || !strings.Contains(c.Found, "not a mount point") {
		t.Errorf("storage check = %+v, want fail: not a mount point", c)
	}
	if c := checkByName(r, "shm"); c.Status != StatusFail || !strings.Contains(c.Fix, "--shm-size=") || !strings.Contains(c.Fix, "medium: Memory") {
		t.Errorf("shm check = %+v, want fail with --shm-size and emptyDir advice", c)
	}
	if !r.Failed() {
		t.Errorf("Report.Failed() = false, want true")
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "FAIL") {
		t.Errorf("WriteText = %q, %v", buf.String(), err)
	}

	fakeMounts(t, proc, filepath.Join(root, "storage"))
	r, _ = Diagnose(context.Background(), cfg, nil, WithProcRoot(proc), WithDevRoot(t.TempDir()), WithTmpRoot(t.TempDir()))
	if c := checkByName(r, "storage"); c.Status != StatusOK || !strings.Contains(c.Found, "nfs4") {
		t.Errorf("storage check with the mount = %+v, want ok on nfs4", c)
	}
}
