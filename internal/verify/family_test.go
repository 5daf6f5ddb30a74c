package verify

import (
	"strings"
	"testing"

	"imagectl/internal/lock"
)

func familyLock(vision, audio string) *lock.Lock {
	l := &lock.Lock{Core: lock.Core{Torch: "2.6.0", TorchVariant: "cu124"}}
	l.Pip = []lock.Wheel{{Name: "torch", Version: "2.6.0+cu124"}, {Name: "numpy", Version: "2.2.1"}}
	if vision != "" {
		l.Pip = append(l.Pip, lock.Wheel{Name: "torchvision", Version: vision})
	}
	if audio != "" {
		l.Pip = append(l.Pip, lock.Wheel{Name: "torchaudio", Version: audio})
	}
	return l
}

// The family checks: each library the lock holds imports with the lock's
// version, that version is the one released with the lock's torch, and
// with CUDA torchvision.ops.nms runs and keeps the right boxes.
func TestFamilyChecks(t *testing.T) {
	ok := map[string]familyOut{
		"torchvision": {Version: "0.21.0+cu124", NMS: []int{0, 2}},
		"torchaudio":  {Version: "2.6.0+cu124"},
	}
	for _, tc := range []struct {
		name          string
		vision, audio string
		out           torchOut
		want          map[string]string // check name -> status, or status: detail fragment
	}{
		{name: "matched, on a GPU", vision: "0.21.0+cu124", audio: "2.6.0+cu124",
			out:  torchOut{CUDAAvailable: true, Family: ok},
			want: map[string]string{"torchvision.version": "pass", "torchaudio.version": "pass", "torchvision.cuda_op": "pass"}},
		{name: "no family in the lock", out: torchOut{CUDAAvailable: true, Family: ok}, want: map[string]string{}},
		{name: "no GPU", vision: "0.21.0+cu124",
			out:  torchOut{Family: map[string]familyOut{"torchvision": {Version: "0.21.0+cu124"}}},
			want: map[string]string{"torchvision.version": "pass", "torchvision.cuda_op": "skip: no CUDA device"}},
		{name: "image drifted from the lock", vision: "0.21.0+cu124", audio: "2.6.0+cu124",
			out: torchOut{CUDAAvailable: true, Family: map[string]familyOut{
				"torchvision": {Version: "0.20.1+cu124", NMS: []int{0, 2}}, "torchaudio": {Version: "2.6.0+cu124"}}},
			want: map[string]string{"torchvision.version": "fail: lock has torchvision 0.21.0+cu124, image has 0.20.1+cu124", "torchaudio.version": "pass", "torchvision.cuda_op": "pass"}},
		{name: "lock pairs another torchvision", vision: "0.20.1+cu124",
			out:  torchOut{CUDAAvailable: true, Family: map[string]familyOut{"torchvision": {Version: "0.20.1+cu124", NMSError: "RuntimeError: operator torchvision::nms does not exist"}}},
			want: map[string]string{"torchvision.version": "fail: torch 2.6.0 is released with torchvision 0.21.0", "torchvision.cuda_op": "fail: operator torchvision::nms does not exist"}},
		{name: "import fails", vision: "0.21.0+cu124",
			out:  torchOut{CUDAAvailable: true, Family: map[string]familyOut{"torchvision": {Error: "import torchvision: OSError: undefined symbol"}}},
			want: map[string]string{"torchvision.version": "fail: undefined symbol", "torchvision.cuda_op": "fail: did not import"}},
		{name: "not installed", audio: "2.6.0+cu124",
			out:  torchOut{Family: map[string]familyOut{}},
			want: map[string]string{"torchaudio.version": "fail: the image imports none"}},
		{name: "PyPI's unlabelled distribution, labelled __version__", vision: "0.21.0", audio: "2.6.0",
			out: torchOut{CUDAAvailable: true, Family: map[string]familyOut{
				"torchvision": {Version: "0.21.0+cu124", NMS: []int{0, 2}}, "torchaudio": {Version: "2.6.0+cu118"}}},
			want: map[string]string{"torchvision.version": "pass", "torchaudio.version": "fail: lock has torchaudio 2.6.0, image has 2.6.0+cu118", "torchvision.cuda_op": "pass"}},
		{name: "wrong boxes", vision: "0.21.0+cu124",
			out:  torchOut{CUDAAvailable: true, Family: map[string]familyOut{"torchvision": {Version: "0.21.0+cu124", NMS: []int{0, 1, 2}}}},
			want: map[string]string{"torchvision.version": "pass", "torchvision.cuda_op": "fail: kept [0 1 2]"}},
	} {
		got := map[string]Check{}
		for _, c := range familyChecks(familyLock(tc.vision, tc.audio), tc.out) {
			got[c.Name] = c
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: checks %v, want %v", tc.name, got, tc.want)
		}
		for name, w := range tc.want {
			c, ok := got[name]
			status, frag, _ := strings.Cut(w, ": ")
			if !ok || string(c.Status) != status || !strings.Contains(c.Detail, frag) {
				t.Errorf("%s: %s = %+v, want %s with %q", tc.name, name, c, status, frag)
			}
		}
	}
}

// pip.constraints passes only when the constraints pin exactly the lock's
// closure and the three dry runs came out as the guard needs.
func TestPipGuardCheck(t *testing.T) {
	wheels := []lock.Wheel{{Name: "torch", Version: "2.6.0+cu124"}, {Name: "numpy", Version: "2.2.1"}}
	good := pipGuardOut{
		Constraint: "/etc/pip/constraint.txt", Pins: []string{"numpy==2.2.1", "torch==2.6.0+cu124"},
		Tried: "torch==0.0.1", Refused: true, Refusal: "ERROR: Cannot install torch==0.0.1", UnconstrainedOK: true, NewOK: true,
	}
	for _, tc := range []struct {
		name   string
		wheels []lock.Wheel
		edit   func(*pipGuardOut)
		want   string
	}{
		{"guarded", wheels, func(*pipGuardOut) {}, "pass: torch==0.0.1 refused"},
		{"no wheels", nil, func(*pipGuardOut) {}, "skip: no pip wheels"},
		{"no PIP_CONSTRAINT", wheels, func(g *pipGuardOut) { *g = pipGuardOut{} }, "fail: sets no PIP_CONSTRAINT"},
		{"unreadable", wheels, func(g *pipGuardOut) { g.Error = "permission denied" }, "fail: permission denied"},
		{"a pin missing", wheels, func(g *pipGuardOut) { g.Pins = g.Pins[1:] }, "fail: no numpy==2.2.1"},
		{"a pin moved", wheels, func(g *pipGuardOut) { g.Pins[0] = "numpy==2.2.2" }, "fail: extra numpy==2.2.2"},
		{"not refused", wheels, func(g *pipGuardOut) { g.Refused = false }, "fail: was not refused"},
		{"pip broken", wheels, func(g *pipGuardOut) { g.UnconstrainedOK = false }, "fail: even without the constraints"},
		{"new refused", wheels, func(g *pipGuardOut) { g.NewOK = false }, "fail: a project the lock does not hold"},
	} {
		g := good
		g.Pins = append([]string(nil), good.Pins...)
		tc.edit(&g)
		c := pipGuardCheck(tc.wheels, g)
		status, frag, _ := strings.Cut(tc.want, ": ")
		if c.Name != "pip.constraints" || string(c.Status) != status || !strings.Contains(c.Detail, frag) {
			t.Errorf("%s: %+v, want %s with %q", tc.name, c, status, frag)
		}
	}
}
