package wheelhouse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"imagectl/internal/atomicfile"
)

// The stand-ins for the real sources of specs/pytorch.hcl:
//
//	DIR/torch/whl/cu118/, DIR/torch/whl/cu124/  the PyTorch index: flat wheels
//	    and PEP 503 pages only (WritePlainIndex), served by a plain
//	    static web server (python3 -m http.server: no JSON, no metadata files,
//	    no range requests)
//	DIR/pypi/  a PyPI-shaped index (wheelhouse: PEP 503 + 691 + 658) with
//	    numpy, pillow, tqdm, transformers, jupyterlab, torch's PyPI
//	    dependencies and Debian's pip wheel
//
// The torch wheels carry the real torch 2.6.0 Requires-Dist pins (NCCL,
// cuDNN, triton and the cu11/cu12 runtime libraries; shared/FACTS.md), and a
// stand-in torch package that imports and reports what the verify probes
// read (torch.__version__, torch.version.cuda, cuDNN and NCCL versions, no
// CUDA device), beside torchvision 0.21.0 and torchaudio 2.6.0 stand-ins
// (the family released with it, pinning torch==2.6.0). Each index also
// holds decoys of the other's projects (torch and torchvision on the PyPI
// side, an old filelock on the torch side, as the real PyTorch index
// re-hosts some PyPI projects): the lock's index routing must never take
// them.

// linux is the marker torch's CUDA requirements carry.
const linux = `; platform_system == "Linux" and platform_machine == "x86_64"`

// torchPyPIDeps are torch 2.6.0's requirements that come from PyPI.
var torchPyPIDeps = []string{
	"filelock", "typing-extensions>=4.10.0", `sympy==1.13.1; python_version >= "3.9"`,
	"networkx", "jinja2", "fsspec",
}

// variant is one CUDA variant of torch 2.6.0 on the PyTorch index. Pins
// from the torch 2.6.0 wheels' metadata: NCCL, cuDNN, cuda-runtime, cublas
// and triton as in shared/FACTS.md; the other library versions as the
// 2.6.0 wheels list them (not re-checked here: no PyPI access).
type variant struct {
	name, cuda string
	libs       [][2]string // nvidia-* name, version
}

var variants = []variant{
	{name: "cu118", cuda: "11.8", libs: [][2]string{
		{"nvidia-cuda-nvrtc-cu11", "11.8.89"}, {"nvidia-cuda-runtime-cu11", "11.8.89"}, {"nvidia-cuda-cupti-cu11", "11.8.87"},
		{"nvidia-cudnn-cu11", "9.1.0.70"}, {"nvidia-cublas-cu11", "11.11.3.6"}, {"nvidia-cufft-cu11", "10.9.0.58"},
		{"nvidia-curand-cu11", "10.3.0.86"}, {"nvidia-cusolver-cu11", "11.4.1.48"}, {"nvidia-cusparse-cu11", "11.7.5.86"},
		{"nvidia-nccl-cu11", "2.21.5"}, {"nvidia-nvtx-cu11", "11.8.86"},
	}},
	{name: "cu124", cuda: "12.4", libs: [][2]string{
		{"nvidia-cuda-nvrtc-cu12", "12.4.127"}, {"nvidia-cuda-runtime-cu12", "12.4.127"}, {"nvidia-cuda-cupti-cu12", "12.4.127"},
		{"nvidia-cudnn-cu12", "9.1.0.70"}, {"nvidia-cublas-cu12", "12.4.5.8"}, {"nvidia-cufft-cu12", "11.2.1.3"},
		{"nvidia-curand-cu12", "10.3.5.147"}, {"nvidia-cusolver-cu12", "11.6.1.9"}, {"nvidia-cusparse-cu12", "12.3.1.170"},
		{"nvidia-cusparselt-cu12", "0.6.2"}, {"nvidia-nccl-cu12", "2.21.5"}, {"nvidia-nvtx-cu12", "12.4.127"},
		{"nvidia-nvjitlink-cu12", "12.4.127"},
	}},
}

// BigLib is the stand-in that gets the big payload by default: cuDNN, the largest
// library wheel of the real cu124 stack (665 MB; torch itself is 767 MB).
const BigLib = "nvidia-cudnn-cu12"

// torchPackage is the stand-in torch: it imports and reports versions.
func torchPackage(version, cuda string) map[string]string {
	return map[string]string{
		"torch/__init__.py": fmt.Sprintf(`"""imagectl stand-in for torch %[1]s: no kernels; it reports what the
verify probes read and that no CUDA device is visible."""
__version__ = %[1]q
from . import version, cuda, backends  # noqa: E402,F401
`, version),
		"torch/version.py":           fmt.Sprintf("__version__ = %q\ncuda = %q\n", version, cuda),
		"torch/cuda/__init__.py":     "from . import nccl  # noqa: F401\n\n\ndef is_available():\n    return False\n\n\ndef device_count():\n    return 0\n\n\ndef get_arch_list():\n    return []\n",
		"torch/cuda/nccl.py":         "def version():\n    return (2, 21, 5)\n",
		"torch/backends/__init__.py": "from . import cudnn  # noqa: F401\n",
		"torch/backends/cudnn.py":    "def version():\n    return 90100\n",
	}
}

// familyPackage is a stand-in torch domain library (torchvision,
// torchaudio): it imports and reports its version as torchinfo.py reads
// it; torchvision.ops.nms raises, as there are no kernels (the probe calls
// it only with CUDA).
func familyPackage(name, version, cuda, imports string) map[string]string {
	files := map[string]string{
		name + "/__init__.py": fmt.Sprintf("\"\"\"imagectl stand-in for %s %s.\"\"\"\n__version__ = %q\n%s", name, version, version, imports),
		name + "/version.py":  fmt.Sprintf("__version__ = %q\ncuda = %q\n", version, cuda),
	}
	if name == "torchvision" {
		files[name+"/ops.py"] = "def nms(boxes, scores, iou_threshold):\n    raise RuntimeError(\"imagectl stand-in: no kernels\")\n"
	}
	return files
}

// StandinSpecs are the wheels of the stand-ins: by torch variant ("cu118",
// "cu124") for the PyTorch index, and for PyPI. big (BigLib, or "torch")
// gets bigBytes of payload in every variant that has it.
func StandinSpecs(big string, bigBytes int64) (map[string][]Spec, []Spec) {
	torchIdx := map[string][]Spec{}
	for _, v := range variants {
		reqs := append([]string{}, torchPyPIDeps...)
		var specs []Spec
		for _, lib := range v.libs {
			reqs = append(reqs, lib[0]+"=="+lib[1]+linux)
			s := Spec{Name: lib[0], Version: lib[1], PayloadBytes: 64 << 10}
			if lib[0] == big {
				s.PayloadBytes = bigBytes
			}
			specs = append(specs, s)
		}
		reqs = append(reqs, "triton==3.2.0"+linux)
		version := "2.6.0+" + v.name
		vision, audio := "0.21.0+"+v.name, "2.6.0+"+v.name
		specs = append(specs,
			Spec{Name: "torch", Version: version, Requires: reqs, RequiresPython: ">=3.9.0", PayloadBytes: torchBytes(big, bigBytes), Files: torchPackage(version, v.cuda)},
			Spec{Name: "triton", Version: "3.2.0", PayloadBytes: 64 << 10},
			// The torch family released with 2.6.0 (compat's family row),
			// with the real wheels' pins on torch.
			Spec{Name: "torchvision", Version: vision, Requires: []string{"numpy", "torch==2.6.0", "pillow!=8.3.*,>=5.3.0"}, PayloadBytes: 64 << 10,
				Files: familyPackage("torchvision", vision, v.cuda, "from . import version, ops  # noqa: E402,F401\n")},
			Spec{Name: "torchaudio", Version: audio, Requires: []string{"torch==2.6.0"}, PayloadBytes: 64 << 10,
				Files: familyPackage("torchaudio", audio, v.cuda, "from . import version  # noqa: E402,F401\n")},
			Spec{Name: "filelock", Version: "3.13.1"}, // re-hosted, older: routing must not take it
		)
		torchIdx[v.name] = specs
	}
	pypi := []Spec{
		{Name: "numpy", Version: "2.2.1"}, {Name: "pillow", Version: "11.1.0"}, {Name: "tqdm", Version: "4.67.1"},
		{Name: "filelock", Version: "3.16.1"}, {Name: "typing_extensions", Version: "4.12.2"},
		{Name: "sympy", Version: "1.13.1", Requires: []string{"mpmath<1.4,>=1.1.0"}}, {Name: "mpmath", Version: "1.3.0"},
		{Name: "networkx", Version: "3.4.2"}, {Name: "Jinja2", Version: "3.1.5", Requires: []string{"MarkupSafe>=2.0"}},
		{Name: "MarkupSafe", Version: "3.0.2"}, {Name: "fsspec", Version: "2024.12.0"},
		{Name: "torch", Version: "2.6.0"}, // a same-named decoy: routing must not take it
		// The rest of the platform's image (specs/pytorch.hcl): transformers
		// with a few of its real requirements, and JupyterLab (its server's
		// requirements left out: the e2e tests run Debian's notebook).
		{Name: "transformers", Version: "4.48.0", Requires: []string{"filelock", "numpy>=1.17", "packaging>=20.0", "tqdm>=4.27"}, RequiresPython: ">=3.9.0"},
		{Name: "packaging", Version: "24.2"},
		{Name: "jupyterlab", Version: "4.3.4", RequiresPython: ">=3.8"},
		{Name: "torchvision", Version: "0.21.0"}, // a same-named decoy: routing must not take it
	}
	return torchIdx, pypi
}

func torchBytes(big string, bigBytes int64) int64 {
	if big == "torch" {
		return bigBytes
	}
	return 1 << 20
}

const standinStamp = "standins.json"

// WriteStandins writes the stand-in indexes under dir: dir/torch/whl/VARIANT
// (WritePlainIndex: what a plain static server serves) and dir/pypi (WriteIndex,
// with the wheel files in copies added as they are). It is cached: a second
// call with the same inputs only checks the stamp.
func WriteStandins(dir, big string, bigBytes int64, copies []string) error {
	torchIdx, pypi := StandinSpecs(big, bigBytes)
	stamp := struct {
		Torch map[string][]Spec
		PyPI  []Spec
		Extra []string
	}{torchIdx, pypi, copies}
	want, err := json.MarshalIndent(stamp, "", "  ")
	if err != nil {
		return err
	}
	want = append(want, '\n')
	if b, err := os.ReadFile(filepath.Join(dir, standinStamp)); err == nil && bytes.Equal(b, want) {
		return nil
	}
	for v, specs := range torchIdx {
		d := filepath.Join(dir, "torch", "whl", v)
		for _, s := range specs {
			if _, err := WriteWheel(d, s); err != nil {
				return err
			}
		}
		if _, err := WritePlainIndex(d); err != nil {
			return err
		}
	}
	pd := filepath.Join(dir, "pypi")
	for _, s := range pypi {
		if _, err := WriteWheel(filepath.Join(pd, "files"), s); err != nil {
			return err
		}
	}
	for _, f := range copies {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(pd, "files", filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	if _, err := WriteIndex(pd); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, standinStamp), want, 0o644)
}
