package runtime

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runtime.json")
	write(t, path, `{"storage":{"path":"/storage","ready_file":"/storage/.ready","timeout":"90s"},"swappiness":10,"min_shm_bytes":1073741824,"driver_floor":"525.60.13","grace_period":"20s"}`)

	cfg, err := LoadConfig(envMap(map[string]string{EnvConfig: path}))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if cfg.Storage.Path != "/storage" || cfg.Storage.Timeout.Std() != 90*time.Second || *cfg.Swappiness != 10 || cfg.GracePeriod.Std() != 20*time.Second {
		t.Errorf("LoadConfig = %+v", cfg)
	}

	cfg, err = LoadConfig(envMap(map[string]string{
		EnvConfig: path, EnvStoragePath: "/data", EnvStorageRequired: "true", EnvStorageTimeout: "5s",
		EnvQuiet: "1", EnvSwappiness: "off", EnvMinShm: "8G", EnvDriverPolicy: "fail", EnvFingerprint: "off",
	}))
	if err != nil {
		t.Fatalf("LoadConfig with overrides: %v", err)
	}
	if cfg.Storage.Path != "/data" || !cfg.Storage.Required || cfg.Storage.Timeout.Std() != 5*time.Second ||
		!cfg.Quiet || cfg.Swappiness != nil || cfg.MinShmBytes != 8<<30 || cfg.DriverPolicy != "fail" || cfg.FingerprintPath != "" {
		t.Errorf("LoadConfig with overrides = %+v", cfg)
	}

	// No file at the default path is fine (the init then only supervises);
	// a missing explicit file is not.
	if _, err := LoadConfig(envMap(map[string]string{EnvConfig: filepath.Join(dir, "missing.json")})); err == nil {
		t.Errorf("LoadConfig(missing explicit file) = nil error, want one")
	}

	for name, env := range map[string]map[string]string{
		"bad bool":       {EnvStorageRequired: "maybe"},
		"bad duration":   {EnvStorageTimeout: "soon"},
		"bad swappiness": {EnvSwappiness: "300"},
		"bad size":       {EnvMinShm: "lots"},
		"bad policy":     {EnvDriverPolicy: "panic"},
		"bad floor":      {EnvDriverFloor: "525.x"},
	} {
		t.Run(name, func(t *testing.T) {
			env[EnvConfig] = path
			if _, err := LoadConfig(envMap(env)); err == nil {
				t.Errorf("LoadConfig(%v) = nil error, want one", env)
			}
		})
	}

	unknown := filepath.Join(dir, "unknown.json")
	write(t, unknown, `{"storag":{}}`)
	if _, err := LoadConfig(envMap(map[string]string{EnvConfig: unknown})); err == nil {
		t.Errorf("LoadConfig(unknown field) = nil error, want one")
	}

	// A hand edit that left a brace behind is refused, naming the file.
	trailing := filepath.Join(dir, "trailing.json")
	write(t, trailing, `{"swappiness":10}}`)
	if _, err := LoadConfig(envMap(map[string]string{EnvConfig: trailing})); err == nil || !strings.Contains(err.Error(), trailing) || !strings.Contains(err.Error(), "trailing data") {
		t.Errorf("LoadConfig(trailing brace) = %v, want trailing data in %s", err, trailing)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "64M": 64 << 20, "8g": 8 << 30, "512Mi": 512 << 20, "2GiB": 2 << 30, "1T": 1 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "G", "1.5G", "ten"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = nil error, want one", in)
		}
	}
}
