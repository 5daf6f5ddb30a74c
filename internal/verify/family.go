package verify

import (
	"fmt"
	"slices"

	"imagectl/internal/compat"
	"imagectl/internal/lock"
	"imagectl/internal/pep"
	"imagectl/internal/version"
)

// nmsWant is what torchinfo.py's torchvision.ops.nms call keeps: boxes 0
// and 2 (box 1 overlaps box 0 above the 0.5 IoU threshold).
var nmsWant = []int{0, 2}

// familyChecks checks the torch family the lock holds (torchvision,
// torchaudio): each imports with the lock's version (as torch.version
// compares them: a distribution without a local label, as PyPI's default
// variant has, matches a __version__ carrying the lock's variant), which is the one
// released with the lock's torch (compat's family row), and with CUDA a
// torchvision CUDA op runs. A library the lock does not hold gets no check.
func familyChecks(l *lock.Lock, t torchOut) []Check {
	locked := map[string]string{}
	for _, w := range l.Pip {
		locked[pep.Normalize(w.Name)] = w.Version
	}
	rel, _ := compat.Release(l.Core.Torch)
	var out []Check
	for _, name := range compat.FamilyPackages {
		want, ok := locked[name]
		if !ok {
			continue
		}
		got := t.Family[name]
		c := Check{Name: name + ".version", Value: got.Version, Threshold: "== " + want, Status: Pass}
		public, _ := version.SplitLocal(want)
		switch paired, known := rel.FamilyVersion(name); {
		case t.Error != "":
			c.Status, c.Detail = Fail, "torch did not import: "+t.Error
		case got.Error != "":
			c.Status, c.Detail = Fail, got.Error
		case got.Version == "":
			c.Status, c.Detail = Fail, fmt.Sprintf("the lock holds %s %s, the image imports none", name, want)
		case !torchMatches(want, l.Core.TorchVariant, got.Version):
			c.Status, c.Detail = Fail, fmt.Sprintf("lock has %s %s, image has %s", name, want, got.Version)
		case known && public != paired:
			c.Status, c.Detail = Fail, fmt.Sprintf("torch %s is released with %s %s; the lock holds %s (pytorch/vision#4222)", l.Core.Torch, name, paired, want)
		case known:
			c.Detail = fmt.Sprintf("released with torch %s", l.Core.Torch)
		}
		out = append(out, c)
	}
	if _, ok := locked["torchvision"]; ok {
		out = append(out, nmsCheck(t))
	}
	return out
}

// nmsCheck is torchvision.cuda_op: torchvision.ops.nms on CUDA tensors.
func nmsCheck(t torchOut) Check {
	c := Check{Name: "torchvision.cuda_op", Threshold: fmt.Sprintf("ops.nms keeps %v", nmsWant), Status: Pass}
	tv := t.Family["torchvision"]
	switch {
	case !t.CUDAAvailable:
		c.Status, c.Threshold, c.Detail = Skip, "", "no CUDA device: torchvision.ops.nms runs on CUDA only here"
	case tv.Error != "" || tv.Version == "":
		c.Status, c.Detail = Fail, "torchvision did not import"
	case tv.NMSError != "":
		c.Status, c.Value, c.Detail = Fail, "error", "torchvision.ops.nms on CUDA: "+tv.NMSError
	case !slices.Equal(tv.NMS, nmsWant):
		c.Status, c.Value = Fail, fmt.Sprint(tv.NMS)
		c.Detail = fmt.Sprintf("torchvision.ops.nms on CUDA kept %v, want %v", tv.NMS, nmsWant)
	default:
		c.Value = fmt.Sprint(tv.NMS)
		c.Detail = "torchvision " + tv.Version + " on CUDA"
	}
	return c
}
