package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
)

// envOut is what probes/env.py prints.
type envOut struct {
	Python     string `json:"python"`
	Executable string `json:"executable"`
	// RealExecutable is the interpreter behind Executable (a venv's python
	// is a link to it); LockedInterpreter is the lock's python.path as the
	// image resolves it.
	RealExecutable    string            `json:"real_executable"`
	LockedInterpreter string            `json:"locked_interpreter"`
	Packages          [][2]string       `json:"packages"`
	ShmBytes          *int64            `json:"shm_bytes"`
	TmpdirWritable    bool              `json:"tmpdir_writable"`
	Env               map[string]string `json:"env"`
	Fingerprint       struct {
		Path    string          `json:"path"`
		Present bool            `json:"present"`
		Content json.RawMessage `json:"content"`
		Error   string          `json:"error"`
	} `json:"fingerprint"`
	CUDAToolkit cudaToolkitOut `json:"cuda_toolkit"`
	PipGuard    pipGuardOut    `json:"pip_guard"`
}

// cudaToolkitOut is the base's CUDA toolkit as the image states it: each
// field empty when the image lacks that source.
type cudaToolkitOut struct {
	// Env is CUDA_VERSION, which nvidia/cuda images set in their config.
	Env string `json:"env"`
	// VersionJSON is cuda.version of /usr/local/cuda/version.json;
	// VersionJSONError says why a present file could not be read.
	VersionJSON      string `json:"version_json"`
	VersionJSONError string `json:"version_json_error"`
	// CudartDeb is the installed cuda-cudart-X-Y package: name, version.
	CudartDeb []string `json:"cudart_deb"`
}

// torchOut is what probes/torchinfo.py prints.
type torchOut struct {
	Error         string   `json:"error"`
	Driver        string   `json:"driver"`
	Torch         string   `json:"torch"`
	CUDA          *string  `json:"cuda"`
	CUDNN         *int     `json:"cudnn"`
	CUDNNError    string   `json:"cudnn_error"`
	NCCL          *string  `json:"nccl"`
	NCCLError     string   `json:"nccl_error"`
	CUDAAvailable bool     `json:"cuda_available"`
	DeviceCount   int      `json:"device_count"`
	ArchList      []string `json:"arch_list"`
	Devices       []struct {
		Name       string `json:"name"`
		Capability string `json:"capability"`
	} `json:"devices"`
	// Family holds torchvision and torchaudio when installed.
	Family map[string]familyOut `json:"family"`
}

// familyOut is one domain library of torch as torchinfo.py imported it.
type familyOut struct {
	Version string `json:"version"`
	Error   string `json:"error"`
	// NMS is the kept indices of torchvision.ops.nms on CUDA (want [0 2]);
	// NMSError why it failed. Both empty without CUDA.
	NMS      []int  `json:"nms"`
	NMSError string `json:"nms_error"`
}

// allReduceOut is what probes/allreduce.py prints.
type allReduceOut struct {
	Error          string  `json:"error"`
	Bytes          int64   `json:"bytes"`
	Iters          int     `json:"iters"`
	WorldSize      int     `json:"world_size"`
	OK             bool    `json:"ok"`
	BadElements    int64   `json:"bad_elements"`
	First          float64 `json:"first"`
	Want           float64 `json:"want"`
	SecondsPerIter float64 `json:"seconds_per_iter"`
	AlgBW          float64 `json:"algbw_gbps"`
	BusBW          float64 `json:"busbw_gbps"`
	WallS          float64 `json:"wall_s"`
}

// compileOut is what probes/compile.py prints.
type compileOut struct {
	Error       string         `json:"error"`
	CacheDir    string         `json:"cache_dir"`
	Device      string         `json:"device"`
	ImportS     float64        `json:"import_s"`
	FirstCallS  float64        `json:"first_call_s"`
	TotalS      float64        `json:"total_s"`
	OK          bool           `json:"ok"`
	Inductor    map[string]int `json:"inductor"`
	AOTAutograd map[string]int `json:"aot_autograd"`
}

// hits counts the compiled-graph cache hits: Inductor's FX graph cache and
// AOTAutograd's cache (which loads Inductor's output from the same folder).
func (c compileOut) hits() int {
	return c.Inductor["fxgraph_cache_hit"] + c.AOTAutograd["autograd_cache_hit"]
}

// parseProbe finds the last line of out that is a JSON object whose
// "probe" field is name (libraries such as NCCL may print their own lines
// to stdout) and decodes it into v.
func parseProbe(name string, out []byte, v any) error {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var head struct {
			Probe string `json:"probe"`
		}
		if json.Unmarshal(line, &head) == nil && head.Probe == name {
			last = append(last[:0], line...)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading probe %s output: %w", name, err)
	}
	if last == nil {
		return fmt.Errorf("probe %s printed no result line", name)
	}
	if err := json.Unmarshal(last, v); err != nil {
		return fmt.Errorf("decoding probe %s result: %w", name, err)
	}
	return nil
}
