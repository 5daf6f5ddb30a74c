package build

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strings"

	gateway "github.com/moby/buildkit/frontend/gateway/client"
	fstypes "github.com/tonistiigi/fsutil/types"

	"imagectl/internal/compat"
	"imagectl/internal/dpkg"
	"imagectl/internal/lock"
)

// rootReader is what the report reads of a built root filesystem (a
// gateway.Reference).
type rootReader interface {
	ReadFile(ctx context.Context, req gateway.ReadRequest) ([]byte, error)
	StatFile(ctx context.Context, req gateway.StatRequest) (*fstypes.Stat, error)
}

// cudaDuplicates returns the CUDA libraries the built root filesystem ref
// holds twice: as an installed deb (the base's or apt's) and as one of the
// lock's wheels. A root without a dpkg database has no debs. A deb counts
// only when one of the shared libraries its file list names is in the
// root: a base that deleted a deb's files without dpkg (a slimmed image, a
// fixture that packs part of a host) keeps its paragraph in the status
// file, and the library is then held once.
func cudaDuplicates(ctx context.Context, ref rootReader, l *lock.Lock, log *slog.Logger) ([]compat.CUDADuplicate, error) {
	var wheels []compat.Package
	for _, w := range l.Pip {
		wheels = append(wheels, compat.Package{Name: w.Name, Version: w.Version, Bytes: w.Size})
	}
	if !hasNvidiaWheel(wheels) {
		return nil, nil // no CUDA wheel: nothing to read
	}
	b, err := ref.ReadFile(ctx, gateway.ReadRequest{Filename: dpkg.StatusPath})
	if err != nil {
		return nil, fmt.Errorf("reading %s of the image: %w", dpkg.StatusPath, err)
	}
	debs, arch, err := installedDebs(b)
	if err != nil {
		return nil, err
	}
	var out []compat.CUDADuplicate
	for _, d := range compat.CUDADuplicates(debs, wheels) {
		held, err := libraryPresent(ctx, ref, d.Deb.Name, arch[d.Deb.Name])
		if err != nil {
			return nil, err
		}
		if !held {
			log.Debug("CUDA deb listed by dpkg but none of its libraries is in the image", "deb", d.Deb.Name, "library", d.Library)
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// libraryPresent reports whether one of the shared libraries (a name with
// ".so") that deb's file list (/var/lib/dpkg/info/NAME[:ARCH].list) names
// is in the root. A deb without a readable list is taken as present: dpkg
// says it is installed, and nothing says otherwise.
func libraryPresent(ctx context.Context, ref rootReader, deb, arch string) (bool, error) {
	var list []byte
	for _, p := range dpkg.ListPaths(deb, arch) {
		if b, err := ref.ReadFile(ctx, gateway.ReadRequest{Filename: p}); err == nil {
			list = b
			break
		}
	}
	if list == nil {
		return true, nil
	}
	libs := 0
	for _, p := range strings.Split(string(list), "\n") {
		if !strings.Contains(path.Base(p), ".so") {
			continue
		}
		libs++
		if st, err := ref.StatFile(ctx, gateway.StatRequest{Path: p}); err == nil && st != nil {
			return true, nil
		} else if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	return libs == 0, nil // a list naming no library: nothing to contradict dpkg
}

func hasNvidiaWheel(ws []compat.Package) bool {
	for _, w := range ws {
		if strings.HasPrefix(w.Name, "nvidia-") {
			return true
		}
	}
	return false
}

// installedDebs reads the installed packages ("install ok installed") of a
// dpkg status file with their Installed-Size in bytes, and each one's
// Architecture (which names its file list in a multi-arch root).
func installedDebs(b []byte) ([]compat.Package, map[string]string, error) {
	entries, err := dpkg.ParseStatus(b)
	if err != nil {
		return nil, nil, err
	}
	var out []compat.Package
	arch := map[string]string{}
	for _, e := range entries {
		if e.Installed() {
			out = append(out, compat.Package{Name: e.Package, Version: e.Version, Bytes: e.InstalledBytes()})
			arch[e.Package] = e.Architecture
		}
	}
	return out, arch, nil
}

// logCUDADuplicates reports each library shipped twice, with both sides'
// bytes, and the total a choice would save (docs/build.md, "CUDA shipped
// twice").
func logCUDADuplicates(log *slog.Logger, image, platform string, dups []compat.CUDADuplicate) {
	if len(dups) == 0 {
		return
	}
	var debBytes, wheelBytes int64
	for _, d := range dups {
		debBytes += d.Deb.Bytes
		wheelBytes += d.Wheel.Bytes
		log.Warn("CUDA library shipped twice: in the base (deb) and in a wheel", "image", image, "platform", platform, "library", d.Library,
			"deb", d.Deb.Name+" "+d.Deb.Version, "deb_installed_bytes", d.Deb.Bytes, "wheel", d.Wheel.Name+" "+d.Wheel.Version, "wheel_bytes", d.Wheel.Bytes)
	}
	log.Warn("CUDA shipped twice: use an nvidia/cuda -base- flavour (cudart only) under the torch wheels, or a base whose libraries the wheels need not bring (docs/build.md)",
		"image", image, "platform", platform, "libraries", len(dups), "deb_installed_bytes", debBytes, "wheel_bytes", wheelBytes)
}
