package build

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

	"imagectl/internal/lock"
)

// platform is the platform of a lock that records none: linux/amd64.
var platform = ocispecs.Platform{OS: "linux", Architecture: "amd64"}

// platformOf is the platform a single-platform lock (or one platform's
// view, lock.ForPlatform) is built for: its base's.
func platformOf(l *lock.Lock) (ocispecs.Platform, error) {
	if l.Base.Platform == "" {
		return platform, nil
	}
	p, err := v1.ParsePlatform(l.Base.Platform)
	if err != nil {
		return ocispecs.Platform{}, fmt.Errorf("lock of %s: base platform %q: %w", l.Name, l.Base.Platform, err)
	}
	return ocispecs.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}, nil
}

// platformString is p as the lock names it (lock.PlatformName).
func platformString(p ocispecs.Platform) string {
	return lock.PlatformName(&v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant})
}

// elfMachines maps a GOARCH to the ELF machine of its binaries.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// initPath is the init binary for platform p: the one WithPlatformInit set,
// else for linux/amd64 the WithInit one, else imagectl-init-OS-ARCH beside
// it (bin/imagectl-init-linux-arm64, which `make build` makes).
func (o *options) initPathFor(p ocispecs.Platform) string {
	ps := platformString(p)
	if path, ok := o.platformInit[ps]; ok {
		return path
	}
	if p.OS == platform.OS && p.Architecture == platform.Architecture {
		return o.initPath
	}
	return filepath.Join(filepath.Dir(o.initPath), fmt.Sprintf("imagectl-init-%s-%s", p.OS, p.Architecture))
}

// checkInitArch fails when the init binary at path is an ELF executable of
// another architecture than p's: an amd64 init in an arm64 image would not
// start. A file that is not ELF at all (a test's stand-in) is not judged;
// a missing one is reported when it is read.
func checkInitArch(path string, p ocispecs.Platform) error {
	f, err := elf.Open(path)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("init binary %s for %s: %w", path, platformString(p), err)
	}
	defer f.Close()
	want, ok := elfMachines[p.Architecture]
	if !ok {
		return fmt.Errorf("init binary for %s: architecture %s is not supported", platformString(p), p.Architecture)
	}
	if f.Machine != want {
		return fmt.Errorf("init binary %s is for %s, the %s image needs %s (GOARCH=%s CGO_ENABLED=0; `make build` makes bin/imagectl-init-%s-%s)", path, f.Machine, platformString(p), want, p.Architecture, p.OS, p.Architecture)
	}
	return nil
}
