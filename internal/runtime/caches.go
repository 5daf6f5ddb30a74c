package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CacheDir is one directory the init exports to the workload.
type CacheDir struct {
	// Name is the config key: tmpdir, inductor, triton, tensorrt, hf, cuda.
	Name string `json:"name"`
	Path string `json:"path"`
	// Env are the variables that point at Path.
	Env []string `json:"env"`
	// Compile marks compile caches, which the GC may trim; HF_HOME holds
	// models and datasets and is never trimmed.
	Compile bool `json:"compile"`
	// FromEnv is set when the variable was already in the environment and
	// the init left it alone.
	FromEnv bool `json:"from_env,omitempty"`
}

// cacheDirs lists the configured directories, in export order.
func cacheDirs(c Config) []CacheDir {
	all := []CacheDir{
		{Name: "tmpdir", Path: c.TmpDir, Env: []string{"TMPDIR"}},
		{Name: "inductor", Path: c.Caches.Inductor, Env: []string{"TORCHINDUCTOR_CACHE_DIR"}, Compile: true},
		{Name: "triton", Path: c.Caches.Triton, Env: []string{"TRITON_CACHE_DIR"}, Compile: true},
		// TensorRT has no variable of its own: ONNX Runtime's TensorRT
		// provider reads ORT_TENSORRT_CACHE_PATH, and Torch-TensorRT code
		// passes IMAGECTL_TENSORRT_CACHE_DIR to DiskEngineCache.
		{Name: "tensorrt", Path: c.Caches.TensorRT, Env: []string{"IMAGECTL_TENSORRT_CACHE_DIR", "ORT_TENSORRT_CACHE_PATH"}, Compile: true},
		{Name: "hf", Path: c.Caches.HF, Env: []string{"HF_HOME"}},
		{Name: "cuda", Path: c.Caches.CUDA, Env: []string{"CUDA_CACHE_PATH"}, Compile: true},
	}
	var out []CacheDir
	for _, d := range all {
		if d.Path != "" {
			d.Path = filepath.Clean(d.Path)
			out = append(out, d)
		}
	}
	return out
}

// relocate moves a path under storage root to the same place under
// fallback, for when optional storage never became ready.
func relocate(path, root, fallback string) string {
	if root == "" || root == "/" {
		return path
	}
	if path == root || strings.HasPrefix(path, root+"/") {
		return filepath.Join(fallback, strings.TrimPrefix(path, root))
	}
	return path
}

// makeDir creates dir and any missing parents with mode 0775 (whatever the
// umask), leaving existing directories as they are.
func makeDir(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := makeDir(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o775); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o775)
}

// envSet reports whether name has a non-empty value in env.
func envSet(env []string, name string) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok && v != "" {
			return true
		}
	}
	return false
}

// setEnv returns env with name=value, replacing an existing entry.
func setEnv(env []string, name, value string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			env[i] = name + "=" + value
			return env
		}
	}
	return append(env, name+"="+value)
}
