// Package sbomtest builds images shaped like imagectl's builds, for tests
// that read an image's packages without a BuildKit daemon: a Debian-like
// base (os-release, a dpkg database) and then the layers build.Plan gives
// the lock (the dpkg database with the locked debs, the venv with pip, one
// dist-info directory per locked wheel, the init).
package sbomtest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"imagectl/internal/build/layerplan"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
)

// BaseDebs are the packages of the default base: a few of a debootstrap
// minbase, as dpkg records them.
var BaseDebs = []lock.Deb{
	{Name: "base-files", Version: "12.4+deb12u8", Arch: "amd64"},
	{Name: "bash", Version: "5.2.15-2+b7", Arch: "amd64"},
	{Name: "coreutils", Version: "9.1-1", Arch: "amd64"},
	{Name: "dpkg", Version: "1.21.22", Arch: "amd64"},
	{Name: "libc6", Version: "2.36-9+deb12u9", Arch: "amd64"},
	{Name: "tzdata", Version: "2024b-0+deb12u1", Arch: "all"},
}

// PipVersion is the pip the venv layer holds when the lock has no resolver.
const PipVersion = "23.0.1"

// InitBinary is the content of the init in the images Image builds.
var InitBinary = []byte("\x7fELF imagectl-init stand-in\n")

// File is one entry of a layer: a regular file, a symlink (Link set) or,
// with a path whose base name starts with .wh., a whiteout.
type File struct {
	Path string
	Body string
	Link string
}

// Layer returns an uncompressed-tar layer holding files.
func Layer(files ...File) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Mode: 0o644, Size: int64(len(f.Body)), Typeflag: tar.TypeReg}
		if f.Link != "" {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.Link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.Body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// Status is a dpkg status file listing debs as installed.
func Status(debs ...lock.Deb) string {
	debs = slices.Clone(debs)
	slices.SortFunc(debs, func(a, b lock.Deb) int { return strings.Compare(a.Name+":"+a.Arch, b.Name+":"+b.Arch) })
	var b strings.Builder
	for i, d := range debs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Package: %s\nStatus: install ok installed\nPriority: optional\nSection: libs\nInstalled-Size: 100\n"+
			"Maintainer: Debian Maintainers <debian@example.org>\nArchitecture: %s\nVersion: %s\n"+
			"Description: %s\n the %s package\n .\n a second paragraph\n", d.Name, d.Arch, d.Version, d.Name, d.Name)
	}
	return b.String()
}

// LicenseExpressions are the License-Expression fields (core metadata
// 2.4, PEP 639) DistInfo writes, by distribution name; the others get the
// older free-text License field only, as most wheels have it.
var LicenseExpressions = map[string]string{"typing-extensions": "PSF-2.0"}

// DistInfo is the METADATA file of a distribution in the venv.
func DistInfo(name, version string) File {
	dir := strings.ReplaceAll(name, "-", "_") + "-" + version + ".dist-info"
	md := "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\nSummary: " + name +
		"\nLicense: Copyright (c) the " + name + " developers.\n        All rights reserved.\n"
	if lic, ok := LicenseExpressions[name]; ok {
		md = "Metadata-Version: 2.4\nName: " + name + "\nVersion: " + version + "\nSummary: " + name + "\nLicense-Expression: " + lic + "\n"
	}
	return File{Path: initconfig.VenvPath + "/lib/python3.11/site-packages/" + dir + "/METADATA",
		Body: md + "\nLong description: Name: not-this\n"}
}

// Image returns an image as imagectl builds one from l on the default base
// (BaseDebs in a Debian 12 layer): the planned layers of layerplan.Of(l) in
// order, each with the files its step leaves.
func Image(l *lock.Lock) (v1.Image, error) {
	base, err := Layer(
		File{Path: "/usr/lib/os-release", Body: "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n"},
		File{Path: "/etc/os-release", Link: "../usr/lib/os-release"},
		File{Path: "/var/lib/dpkg/status", Body: Status(BaseDebs...)},
	)
	if err != nil {
		return nil, err
	}
	layers := []v1.Layer{base}
	for _, pl := range layerplan.Of(l).Layers {
		var files []File
		switch pl.Kind {
		case layerplan.KindBase:
			continue
		case layerplan.KindSystem:
			// dpkg rewrites its whole database: the base's packages, the
			// locked ones upgrading some of them.
			all := map[string]lock.Deb{}
			for _, d := range append(slices.Clone(BaseDebs), pl.Debs...) {
				all[d.Name+":"+d.Arch] = d
			}
			var debs []lock.Deb
			for _, d := range all {
				debs = append(debs, d)
			}
			files = append(files, File{Path: "/var/lib/dpkg/status", Body: Status(debs...)})
		case layerplan.KindVenv:
			pip := PipVersion
			if l.Resolver.Version != "" {
				pip = l.Resolver.Version
			}
			files = append(files, DistInfo("pip", pip), File{Path: initconfig.VenvPath + "/pyvenv.cfg", Body: "home = /usr/bin\n"})
		case layerplan.KindBig, layerplan.KindPeriphery:
			for _, w := range pl.Wheels {
				files = append(files, DistInfo(w.Name, w.Version))
			}
		case layerplan.KindInit:
			files = append(files, File{Path: initconfig.InitPath, Body: string(InitBinary)})
		case layerplan.KindRuntime:
			files = append(files, File{Path: initconfig.Path, Body: "{}\n"})
		}
		ly, err := Layer(files...)
		if err != nil {
			return nil, err
		}
		layers = append(layers, ly)
	}
	return mutate.AppendLayers(empty.Image, layers...)
}
