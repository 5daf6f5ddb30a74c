package build

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	gateway "github.com/moby/buildkit/frontend/gateway/client"
	"pault.ag/go/debian/control"

	"imagectl/internal/compat"
	"imagectl/internal/lock"
)

// dpkgStatus is dpkg's database of installed packages.
const dpkgStatus = "/var/lib/dpkg/status"

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
	b, err := ref.ReadFile(ctx, gateway.ReadRequest{Filename: dpkgStatus})
	if err != nil {
		return nil, fmt.Errorf("reading %s of the image: %w", dpkgStatus, err)
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

// statusEntry is one paragraph of the dpkg database.
type statusEntry struct {
	control.Paragraph
	Package       string
	Status        string
	Version       string
	InstalledSize string `control:"Installed-Size"`
}

// installedDebs reads the installed packages ("install ok installed") of a
// dpkg status file with their Installed-Size (KiB in dpkg's database) in
// bytes.
func installedDebs(b []byte) ([]compat.Package, error) {
	var entries []statusEntry
	if err := control.Unmarshal(&entries, bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", dpkgStatus, err)
	}
	var out []compat.Package
	for _, e := range entries {
		if f := strings.Fields(e.Status); len(f) != 3 || f[2] != "installed" {
			continue
		}
		kib, _ := strconv.ParseInt(strings.TrimSpace(e.InstalledSize), 10, 64)
		out = append(out, compat.Package{Name: e.Package, Version: e.Version, Bytes: kib << 10})
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
