// gputool mklock locks the environment it runs in, for the verify stage's
// GPU runs: it asks the given Python (with imagectl's own env and torch
// probes) for its interpreter, wheels and torch/CUDA/cuDNN/NCCL versions and
// writes two locks:
//
//   - <name>.lock.json: that environment as it is (verification must pass);
//   - torch2.6-cu124.lock.json: the same wheel set with the shipped torch 2.6
//     core (torch 2.6.0+cu124, NCCL 2.21.5, cuDNN 9.1.0.70, triton 3.2.0,
//     Python 3.11, driver floor 525.60.13): verification must fail and name
//     every drifted version.
//
// The wheels carry no URL or sha256: the environment was not built from a
// lock. These locks are test data, not build inputs.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/spec"
	"imagectl/internal/verify"
)

// mklockMain is `gputool mklock`.
func mklockMain(args []string) error {
	fl := flag.NewFlagSet("mklock", flag.ContinueOnError)
	py := fl.String("python", "python3", "the environment's Python")
	name := fl.String("name", "h200-torch2.11-cu130", "lock name")
	out := fl.String("out", ".", "output folder")
	floor := fl.String("driver-floor", "580.65.06", "driver floor of the observed lock")
	minGPUs := fl.Int("min-gpus", 2, "verify.min_gpus")
	busbw := fl.Float64("min-busbw", 150, "verify.min_busbw_gbps")
	storage := fl.String("storage", "/tmp/imagectl-storage", "runtime.storage.path")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if err := mklock(*py, *name, *out, *floor, *minGPUs, *busbw, *storage); err != nil {
		return fmt.Errorf("mklock: %w", err)
	}
	return nil
}

type envOut struct {
	Python     string      `json:"python"`
	Executable string      `json:"executable"`
	Packages   [][2]string `json:"packages"`
}

type torchOut struct {
	Torch    string   `json:"torch"`
	CUDA     string   `json:"cuda"`
	CUDNN    int      `json:"cudnn"`
	NCCL     string   `json:"nccl"`
	ArchList []string `json:"arch_list"`
}

func probe(py, script string, v any) error {
	scripts, err := verify.ProbeScripts()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "probe-*.py")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(scripts[script]); err != nil {
		return err
	}
	f.Close()
	b, err := exec.Command(py, f.Name()).Output()
	if err != nil {
		return fmt.Errorf("%s %s: %w", py, script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return json.Unmarshal([]byte(lines[len(lines)-1]), v)
}

func mklock(py, name, out, floor string, minGPUs int, busbw float64, storage string) error {
	var env envOut
	var tor torchOut
	if err := probe(py, "env.py", &env); err != nil {
		return err
	}
	if err := probe(py, "torchinfo.py", &tor); err != nil {
		return err
	}
	pub, variant, _ := strings.Cut(tor.Torch, "+")
	minor := strings.Join(strings.SplitN(env.Python, ".", 3)[:2], ".")
	wheels := map[string]string{}
	var pip []lock.Wheel
	for _, p := range env.Packages {
		wheels[p[0]] = p[1]
		pip = append(pip, lock.Wheel{Name: p[0], Version: p[1]})
	}
	cudnn := findWheel(wheels, `^nvidia-cudnn-cu\d+$`)
	nccl := findWheel(wheels, `^nvidia-nccl-cu\d+$`)
	if nccl == "" {
		nccl = tor.NCCL
	}
	if cudnn == "" {
		cudnn = fmt.Sprintf("%d.%d.%d", tor.CUDNN/10000, tor.CUDNN%10000/100, tor.CUDNN%100)
	}
	swap := 60
	st := storage
	rt := initconfig.Config{
		Storage:         initconfig.Storage{Path: st, Timeout: initconfig.Duration(5 * time.Second)},
		Swappiness:      &swap,
		MinShmBytes:     1 << 30,
		TmpDir:          st + "/tmp",
		Caches:          initconfig.Caches{Inductor: st + "/cache/inductor", Triton: st + "/cache/triton", HF: st + "/cache/hf"},
		DriverFloor:     floor,
		DriverPolicy:    "fail",
		FingerprintPath: st + "/fingerprint.json",
		Image:           initconfig.ImageFacts{Name: name, CUDA: tor.CUDA, Torch: tor.Torch, Python: minor, NCCL: nccl, CUDNN: cudnn},
	}
	l := &lock.Lock{
		Name:            name,
		Spec:            lock.Source{Path: "hack/gpu/mklock (observed on the GPU machine, not from a spec)"},
		SourceDateEpoch: 0,
		Core: lock.Core{CUDA: tor.CUDA, TorchVariant: variant, Torch: pub, Python: minor,
			NCCL: nccl, CUDNN: cudnn, DriverFloor: floor, Archs: tor.ArchList},
		Base:    lock.Base{Ref: "the GPU machine's own environment", Platform: "linux/amd64"},
		Pip:     pip,
		Runtime: rt,
		Verify:  spec.Verify{MinGPUs: minGPUs, MinBusBandwidthGBps: busbw, AllReduceBytes: 256 << 20, CompileCache: true},
	}
	if err := write(filepath.Join(out, name+".lock.json"), l); err != nil {
		return err
	}

	// The shipped torch 2.6 core (FACTS.md: cu124 wheel pins) on the same wheel set.
	old := *l
	old.Name = "torch2.6-cu124"
	old.Core = lock.Core{CUDA: "12.4", TorchVariant: "cu124", Torch: "2.6.0", Python: "3.11", NCCL: "2.21.5",
		CUDNN: "9.1.0.70", DriverFloor: "525.60.13", Archs: []string{"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"}}
	old.Runtime.DriverFloor = "525.60.13"
	old.Runtime.Image = initconfig.ImageFacts{Name: old.Name, CUDA: "12.4", Torch: "2.6.0+cu124", Python: "3.11", NCCL: "2.21.5", CUDNN: "9.1.0.70"}
	old.Pip = nil
	repl := map[string]string{"torch": "2.6.0+cu124", "triton": "3.2.0"}
	for _, w := range pip {
		switch {
		case regexp.MustCompile(`^nvidia-nccl-cu\d+$`).MatchString(w.Name):
			w = lock.Wheel{Name: "nvidia-nccl-cu12", Version: "2.21.5"}
		case regexp.MustCompile(`^nvidia-cudnn-cu\d+$`).MatchString(w.Name):
			w = lock.Wheel{Name: "nvidia-cudnn-cu12", Version: "9.1.0.70"}
		case repl[w.Name] != "":
			w.Version = repl[w.Name]
		}
		old.Pip = append(old.Pip, w)
	}
	return write(filepath.Join(out, old.Name+".lock.json"), &old)
}

func findWheel(m map[string]string, pattern string) string {
	re := regexp.MustCompile(pattern)
	for n, v := range m {
		if re.MatchString(n) {
			return v
		}
	}
	return ""
}

func write(path string, l *lock.Lock) error {
	if err := lock.Write(path, l); err != nil {
		return err
	}
	fmt.Println("wrote", path, l.Digest)
	return nil
}
