package build

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// unitLock is a lock with made-up artifacts on a reserved domain: enough to
// plan and marshal, never fetched.
func unitLock() *lock.Lock {
	l := &lock.Lock{
		SchemaVersion:   lock.SchemaVersion,
		Name:            "unit",
		Spec:            lock.Source{Path: "specs/unit.hcl"},
		SourceDateEpoch: 1700000000,
		Frozen:          []string{"demo-core"},
		Core:            lock.Core{Python: "3.11"},
		Base: lock.Base{
			Ref:            "registry.example.invalid:5000/imagectl/debian-base:bookworm",
			IndexDigest:    "sha256:" + sum("index"),
			ManifestDigest: "sha256:" + sum("manifest"),
			Platform:       "linux/amd64",
		},
		Python:   lock.Python{Version: "3.11.2", Path: "/usr/bin/python3.11", Provider: "base"},
		Resolver: lock.Wheel{Name: "pip", Version: "23.0.1", Filename: "pip-23.0.1-py3-none-any.whl", URL: "http://whl.example.invalid/pip-23.0.1-py3-none-any.whl", SHA256: sum("pip")},
		Apt: []lock.Deb{
			{Name: "libjq1", Version: "1.6-2.1", Arch: "amd64", URL: "http://deb.example.invalid/libjq1.deb", SHA256: sum("libjq1"), Size: 1},
			{Name: "jq", Version: "1.6-2.1", Arch: "amd64", URL: "http://deb.example.invalid/jq.deb", SHA256: sum("jq"), Size: 1},
		},
		Pip: []lock.Wheel{
			{Name: "demo-util", Version: "1.1.0", Filename: "demo_util-1.1.0-py3-none-any.whl", URL: "http://whl.example.invalid/demo_util-1.1.0-py3-none-any.whl", SHA256: sum("util-1.1.0")},
			{Name: "demo-core", Version: "1.0.0", Filename: "demo_core-1.0.0-py3-none-any.whl", URL: "http://whl.example.invalid/demo_core-1.0.0-py3-none-any.whl", SHA256: sum("core-1.0.0")},
			{Name: "torch", Version: "2.6.0", Filename: "torch-2.6.0-cp311-cp311-linux_x86_64.whl", URL: "http://whl.example.invalid/torch-2.6.0-cp311-cp311-linux_x86_64.whl", SHA256: sum("torch")},
			{Name: "nvidia-nccl-cu12", Version: "2.21.5", Filename: "nvidia_nccl_cu12-2.21.5-py3-none-manylinux2014_x86_64.whl", URL: "http://whl.example.invalid/nccl.whl", SHA256: sum("nccl")},
		},
		Env:    map[string]string{"HF_HUB_OFFLINE": "1"},
		Labels: map[string]string{"org.opencontainers.image.title": "unit image"},
		Runtime: initconfig.Config{
			Storage: initconfig.Storage{Path: "/storage"},
		},
	}
	l.Repos.Staging = "registry.example.invalid:5000/imagectl/staging/unit"
	d, err := l.ContentDigest()
	if err != nil {
		panic(err)
	}
	l.Digest = d
	return l
}

// fakeInit writes a stand-in init binary and returns the option that uses it.
func fakeInit(t testing.TB) Option {
	t.Helper()
	p := filepath.Join(t.TempDir(), "imagectl-init")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return WithInit(p)
}
