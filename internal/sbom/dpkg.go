package sbom

import (
	"fmt"
	"strings"

	"imagectl/internal/dpkg"
)

// StatusPath is dpkg's database of installed packages.
const StatusPath = dpkg.StatusPath

// parseStatus returns the installed packages ("install ok installed") of a
// dpkg status file, as dpkg-query -W lists them with that status. Packages
// removed with their configuration kept, or never installed, are left out:
// their files are not in the image.
func parseStatus(b []byte) ([]Package, error) {
	entries, err := dpkg.ParseStatus(b)
	if err != nil {
		return nil, err
	}
	var out []Package
	for _, e := range entries {
		if e.Package == "" {
			return nil, fmt.Errorf("parsing %s: a paragraph without Package", StatusPath)
		}
		if !e.Installed() {
			continue
		}
		src, _, _ := strings.Cut(e.Source, " ") // "glibc (2.36-9)" names the source version too
		out = append(out, Package{Type: TypeDeb, Name: e.Package, Version: e.Version, Arch: e.Architecture, SourcePackage: src})
	}
	return out, nil
}
