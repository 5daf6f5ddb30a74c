package build

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	gateway "github.com/moby/buildkit/frontend/gateway/client"

	"imagectl/internal/compat"
	"imagectl/internal/dpkg"
	"imagectl/internal/lock"
)

// cudaDuplicates returns the CUDA libraries the built root filesystem ref
// holds twice: as an installed deb (the base's or apt's) and as one of the
// lock's wheels. A root without a dpkg database has no debs.
func cudaDuplicates(ctx context.Context, ref gateway.Reference, l *lock.Lock) ([]compat.CUDADuplicate, error) {
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
	debs, err := installedDebs(b)
	if err != nil {
		return nil, err
	}
	return compat.CUDADuplicates(debs, wheels), nil
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
// dpkg status file with their Installed-Size in bytes.
func installedDebs(b []byte) ([]compat.Package, error) {
	entries, err := dpkg.ParseStatus(b)
	if err != nil {
		return nil, err
	}
	var out []compat.Package
	for _, e := range entries {
		if e.Installed() {
			out = append(out, compat.Package{Name: e.Package, Version: e.Version, Bytes: e.InstalledBytes()})
		}
	}
	return out, nil
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
