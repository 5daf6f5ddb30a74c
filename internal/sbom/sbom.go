// Package sbom lists every package in a built image: the dpkg database as
// the image holds it (the base's packages and the locked debs), the Python
// distributions in the venv (the locked wheels and what the venv brought,
// such as setuptools), and the init binary; and writes that one list (an
// Inventory) as an SPDX 2.3 document (spdx/tools-golang) and as a
// CycloneDX 1.6 BOM (cyclonedx-go), with the same package URL for each
// package in both and, for what the lock pinned, the lock's sha256.
//
// Read takes the package list from the image's layers, not from the lock
// alone: a CUDA base brings hundreds of packages the lock never names.
package sbom

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"imagectl/internal/build/layerplan"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/pep"
)

// Package types.
const (
	TypeDeb  = "deb"  // a Debian package in the dpkg database
	TypePyPI = "pypi" // a Python distribution in the venv
	TypeInit = "init" // the imagectl init binary
)

// Origin says where a package came from.
type Origin string

const (
	// OriginBase: the base image brought it (it is not in the lock).
	OriginBase Origin = "base"
	// OriginLock: the lock pinned it; SHA256, URL and Filename are the lock's.
	OriginLock Origin = "lock"
	// OriginVenv: in the venv, but not in the lock (a venv made by an
	// imagectl before the lock pinned pip had ensurepip's pip and setuptools).
	OriginVenv Origin = "venv"
	// OriginImagectl: imagectl installed it (the init).
	OriginImagectl Origin = "imagectl"
)

// Package is one package in the image.
type Package struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Arch is the Debian architecture of a deb.
	Arch string `json:"arch,omitempty"`
	// SourcePackage is the Debian source package of a deb, when dpkg names one.
	SourcePackage string `json:"source_package,omitempty"`
	Origin        Origin `json:"origin"`
	// SHA256 (hex) is the lock's hash of the .deb or wheel file for locked
	// packages, and the hash of the file itself for the init.
	SHA256   string `json:"sha256,omitempty"`
	URL      string `json:"url,omitempty"`
	Filename string `json:"filename,omitempty"`
	// Path is where the init binary is installed.
	Path string `json:"path,omitempty"`
	// GoVersion and Module come from the init binary's Go build info.
	GoVersion string `json:"go_version,omitempty"`
	Module    string `json:"module,omitempty"`
	// License is the SPDX license expression a Python distribution
	// declares (License-Expression in its METADATA, core metadata 2.4);
	// empty when it declares none, or one that is not an SPDX expression.
	// The dpkg database records no license, so debs have none.
	License string `json:"license,omitempty"`
}

// Inventory is what Read found in an image.
type Inventory struct {
	// Name is the lock's image name.
	Name string `json:"name"`
	// OSID and OSVersionID are ID and VERSION_ID of the image's os-release
	// (e.g. debian, 12); empty when the image has none.
	OSID        string    `json:"os_id,omitempty"`
	OSVersionID string    `json:"os_version_id,omitempty"`
	Packages    []Package `json:"packages"`
}

// Count returns the number of packages of type typ.
func (inv *Inventory) Count(typ string) int {
	n := 0
	for _, p := range inv.Packages {
		if p.Type == typ {
			n++
		}
	}
	return n
}

// venvMetadata matches the METADATA file of every distribution in the venv.
var venvMetadata = initconfig.VenvPath + "/lib/python*/site-packages/*.dist-info/METADATA"

var osRelease = []string{"/etc/os-release", "/usr/lib/os-release"}

// Read lists the packages of img, an image built from l.
//
// The layers the build planned are the image's last ones (build.Plan). Read
// goes through them from the top, as the runtime stacks them, except the
// layers of one big locked wheel (torch, nvidia-*: gigabytes), whose package
// is the lock's wheel; then through the base's layers, top-down, until the
// dpkg database and os-release are found. A locked deb or wheel that the
// image does not hold at its locked version is a *NotBuiltFromLockError.
func Read(ctx context.Context, img v1.Image, l *lock.Lock) (*Inventory, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the image's layers: %w", err)
	}
	var planned []layerplan.Layer
	for _, pl := range layerplan.Of(l).Layers {
		if pl.Kind != layerplan.KindBase {
			planned = append(planned, pl)
		}
	}
	nbase := len(layers) - len(planned)
	if nbase < 0 {
		return nil, mismatch(l, "the image has %d layers, fewer than the %d the lock plans", len(layers), len(planned))
	}
	ov := newOverlay(func(p string) bool {
		if p == StatusPath || p == initconfig.InitPath || slices.Contains(osRelease, p) {
			return true
		}
		ok, _ := path.Match(venvMetadata, p)
		return ok
	})
	log := logs.From(ctx)
	var fromLock []lock.Wheel // wheels of the layers not read
	for i := len(layers) - 1; i >= 0; i-- {
		if i >= nbase && planned[i-nbase].Kind == layerplan.KindBig {
			fromLock = append(fromLock, planned[i-nbase].Wheels...)
			continue
		}
		if i < nbase && ov.hidden(StatusPath) && ov.osReleaseDecided() {
			break
		}
		if err := ov.read(ctx, layers[i]); err != nil {
			d, _ := layers[i].Digest()
			return nil, fmt.Errorf("reading layer %d (%s): %w", i, d, err)
		}
		log.Debug("sbom: read layer", "index", i, "base", i < nbase)
	}
	return inventory(ov, l, fromLock)
}

// inventory joins what the image holds with the lock.
func inventory(ov *overlay, l *lock.Lock, fromLock []lock.Wheel) (*Inventory, error) {
	inv := &Inventory{Name: l.Name}
	for _, p := range osRelease {
		if b, ok := ov.file(p); ok {
			inv.OSID, inv.OSVersionID = parseOSRelease(b)
			break
		}
	}

	// Debian packages: the dpkg database, the lock's hash for locked ones.
	debs := map[string]lock.Deb{}
	for _, d := range l.Apt {
		debs[d.Name+":"+d.Arch] = d
	}
	status, ok := ov.file(StatusPath)
	if !ok && len(l.Apt) > 0 {
		return nil, mismatch(l, "the image has no %s although the lock installs %d debs", StatusPath, len(l.Apt))
	}
	if ok {
		pkgs, err := parseStatus(status)
		if err != nil {
			return nil, err
		}
		for _, p := range pkgs {
			p.Origin = OriginBase
			if d, ok := debs[p.Name+":"+p.Arch]; ok {
				if d.Version != p.Version {
					return nil, mismatch(l, "deb %s:%s is %s in the image, the lock has %s", p.Name, p.Arch, p.Version, d.Version)
				}
				p.Origin, p.SHA256, p.URL = OriginLock, strings.TrimPrefix(d.SHA256, "sha256:"), d.URL
				delete(debs, p.Name+":"+p.Arch)
			}
			inv.Packages = append(inv.Packages, p)
		}
	}
	for _, d := range l.Apt {
		if _, missing := debs[d.Name+":"+d.Arch]; missing {
			return nil, mismatch(l, "locked deb %s:%s %s is not installed in the image", d.Name, d.Arch, d.Version)
		}
	}

	// Python: the venv's dist-info directories, plus the wheels of the
	// layers not read.
	// The lock's pip (its resolver) is installed in the venv like a wheel.
	locked := slices.Clone(l.Pip)
	if l.Resolver.Name != "" && len(l.Pip) > 0 {
		locked = append(locked, l.Resolver)
	}
	wheels := map[string]lock.Wheel{}
	for _, w := range locked {
		wheels[pep.Normalize(w.Name)] = w
	}
	seen := map[string]bool{}
	var metas []string
	for p := range ov.files {
		if ok, _ := path.Match(venvMetadata, p); ok {
			metas = append(metas, p)
		}
	}
	slices.Sort(metas)
	for _, mp := range metas {
		p, err := parseMetadata(mp, ov.files[mp])
		if err != nil {
			return nil, err
		}
		p.Origin = OriginVenv
		if w, ok := wheels[p.Name]; ok {
			if w.Version != p.Version {
				return nil, mismatch(l, "wheel %s is %s in the image, the lock has %s", p.Name, p.Version, w.Version)
			}
			lic := p.License
			p = wheelPackage(w)
			p.License = lic
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("%s is installed twice in %s", p.Name, initconfig.VenvPath)
		}
		seen[p.Name] = true
		inv.Packages = append(inv.Packages, p)
	}
	for _, w := range fromLock {
		if !seen[w.Name] {
			seen[w.Name] = true
			inv.Packages = append(inv.Packages, wheelPackage(w))
		}
	}
	for _, w := range locked {
		if !seen[pep.Normalize(w.Name)] {
			return nil, mismatch(l, "locked wheel %s %s is not installed in %s", w.Name, w.Version, initconfig.VenvPath)
		}
	}

	// The init.
	if b, ok := ov.file(initconfig.InitPath); ok {
		sum := sha256.Sum256(b)
		p := Package{Type: TypeInit, Name: path.Base(initconfig.InitPath), Origin: OriginImagectl, SHA256: hex.EncodeToString(sum[:]), Path: initconfig.InitPath}
		if bi, err := buildinfo.Read(bytes.NewReader(b)); err == nil {
			p.GoVersion, p.Module = bi.GoVersion, bi.Main.Path
			if v := bi.Main.Version; v != "" && v != "(devel)" {
				p.Version = v
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && p.Version == "" {
					p.Version = s.Value
				}
			}
		}
		inv.Packages = append(inv.Packages, p)
	} else {
		return nil, mismatch(l, "the image has no %s (not an imagectl build)", initconfig.InitPath)
	}

	slices.SortStableFunc(inv.Packages, func(a, b Package) int {
		return strings.Compare(a.Type+"\x00"+a.Name+"\x00"+a.Arch, b.Type+"\x00"+b.Name+"\x00"+b.Arch)
	})
	return inv, nil
}

// NotBuiltFromLockError reports an image that does not hold what its lock
// installs: the digest signed with a lock is not the build of that lock.
type NotBuiltFromLockError struct {
	Lock   string // the lock's image name
	Reason string
}

func (e *NotBuiltFromLockError) Error() string {
	return fmt.Sprintf("%s: the image was not built from lock %s", e.Reason, e.Lock)
}

func mismatch(l *lock.Lock, format string, args ...any) error {
	return &NotBuiltFromLockError{Lock: l.Name, Reason: fmt.Sprintf(format, args...)}
}

func wheelPackage(w lock.Wheel) Package {
	return Package{Type: TypePyPI, Name: w.Name, Version: w.Version, Origin: OriginLock,
		SHA256: strings.TrimPrefix(w.SHA256, "sha256:"), URL: w.URL, Filename: w.Filename}
}

// parseOSRelease returns ID and VERSION_ID of an os-release file.
func parseOSRelease(b []byte) (id, versionID string) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			id = v
		case "VERSION_ID":
			versionID = v
		}
	}
	return id, versionID
}
