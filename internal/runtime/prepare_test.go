package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPrepareCachesOnStorage(t *testing.T) {
	old := syscall.Umask(0o077) // the modes must not depend on the umask
	defer syscall.Umask(old)

	proc, root := t.TempDir(), t.TempDir()
	storage := filepath.Join(root, "storage")
	fakeMounts(t, proc, storage)
	write(t, filepath.Join(proc, "sys/vm/swappiness"), "60\n")
	ten := 10
	cfg := Config{
		Storage:    Storage{Path: storage, Timeout: Duration(time.Second), Required: true},
		Swappiness: &ten,
		TmpDir:     filepath.Join(storage, "tmp"),
		ShmPath:    root,
		Caches: Caches{
			Inductor: filepath.Join(storage, "cache/inductor"),
			Triton:   filepath.Join(storage, "cache/triton"),
			TensorRT: filepath.Join(storage, "cache/tensorrt"),
			HF:       filepath.Join(storage, "hf"),
			CUDA:     filepath.Join(storage, "cache/cuda"),
		},
		FingerprintPath: filepath.Join(storage, "fp/fingerprint.json"),
	}
	env := []string{"PATH=/usr/bin", "HF_HOME=/models"}
	p, err := Prepare(context.Background(), cfg, env, WithProcRoot(proc), WithDevRoot(t.TempDir()), WithTmpRoot(t.TempDir()))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	want := map[string]string{
		"TMPDIR":                      filepath.Join(storage, "tmp"),
		"TORCHINDUCTOR_CACHE_DIR":     filepath.Join(storage, "cache/inductor"),
		"TRITON_CACHE_DIR":            filepath.Join(storage, "cache/triton"),
		"IMAGECTL_TENSORRT_CACHE_DIR": filepath.Join(storage, "cache/tensorrt"),
		"ORT_TENSORRT_CACHE_PATH":     filepath.Join(storage, "cache/tensorrt"),
		"CUDA_CACHE_PATH":             filepath.Join(storage, "cache/cuda"),
		"HF_HOME":                     "/models", // set by the platform: left alone
	}
	for k, v := range want {
		if got := getenvFrom(p.Env, k); got != v {
			t.Errorf("env %s = %q, want %q", k, got, v)
		}
		if k == "HF_HOME" {
			continue
		}
		fi, err := os.Stat(v)
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if fi.Mode().Perm() != 0o775 {
			t.Errorf("%s mode = %v, want 0775", v, fi.Mode().Perm())
		}
	}
	if fi, err := os.Stat(filepath.Join(storage, "cache")); err != nil || fi.Mode().Perm() != 0o775 {
		t.Errorf("created parent %s: %v, %v; want mode 0775", filepath.Join(storage, "cache"), fi.Mode().Perm(), err)
	}
	if _, err := os.Stat(filepath.Join(storage, "hf")); err == nil {
		t.Errorf("HF_HOME came from the environment, but %s was created", filepath.Join(storage, "hf"))
	}
	if b, err := os.ReadFile(filepath.Join(proc, "sys/vm/swappiness")); err != nil || strings.TrimSpace(string(b)) != "10" {
		t.Errorf("swappiness file = %q, %v; want 10", b, err)
	}
	if p.Swappiness == nil || !p.Swappiness.Changed || p.Swappiness.Before != 60 {
		t.Errorf("Swappiness = %+v", p.Swappiness)
	}
	if _, path, err := p.WriteFingerprint(context.Background()); err != nil || path != filepath.Join(storage, "fp/fingerprint.json") {
		t.Fatalf("WriteFingerprint = %q, %v", path, err)
	}
	fp, err := ReadFingerprint(filepath.Join(storage, "fp/fingerprint.json"))
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	if fp.Storage.FSType != "nfs4" || !fp.Storage.Ready || fp.Swappiness != 10 || len(fp.Caches) != 6 {
		t.Errorf("fingerprint = %+v", fp)
	}
	if p.Warnings() != 0 {
		t.Errorf("Prepare logged %d warnings on the happy path, want 0", p.Warnings())
	}
}

func TestPrepareFallsBackWhenOptionalStorageMissing(t *testing.T) {
	proc, root := t.TempDir(), t.TempDir()
	fakeMounts(t, proc, "")
	storage := filepath.Join(root, "storage")
	fallback := filepath.Join(root, "local")
	cfg := Config{
		Storage: Storage{Path: storage, Timeout: Duration(50 * time.Millisecond)},
		Caches:  Caches{Inductor: filepath.Join(storage, "cache/inductor")},
		ShmPath: root,
	}
	p, err := Prepare(context.Background(), cfg, nil, WithProcRoot(proc), WithFallbackRoot(fallback), WithPollInterval(10*time.Millisecond), WithTmpRoot(t.TempDir()))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if got, want := getenvFrom(p.Env, "TORCHINDUCTOR_CACHE_DIR"), filepath.Join(fallback, "cache/inductor"); got != want {
		t.Errorf("TORCHINDUCTOR_CACHE_DIR = %q, want the fallback %q", got, want)
	}
	if _, err := os.Stat(storage); err == nil {
		t.Errorf("%s was created although storage never came", storage)
	}
	if p.Warnings() != 1 {
		t.Errorf("Prepare logged %d warnings, want 1 (storage)", p.Warnings())
	}
}

func TestPrepareDriverPolicy(t *testing.T) {
	proc, dev := fakeGPUHost(t, "470.239.06", []int{0}, []int{0})
	root := t.TempDir()
	cfg := Config{DriverFloor: "525.60.13", ShmPath: root}
	if _, err := Prepare(context.Background(), cfg, nil, WithProcRoot(proc), WithDevRoot(dev), WithTmpRoot(root)); err != nil {
		t.Errorf("Prepare(warn policy) = %v, want nil (a warning)", err)
	}
	cfg.DriverPolicy = "fail"
	_, err := Prepare(context.Background(), cfg, nil, WithProcRoot(proc), WithDevRoot(dev), WithTmpRoot(root))
	if _, ok := err.(*DriverTooOldError); !ok {
		t.Errorf("Prepare(fail policy) = %v, want *DriverTooOldError", err)
	}
}
