package sbom

import (
	"bytes"
	"fmt"
	"strings"

	"pault.ag/go/debian/control"
)

// StatusPath is dpkg's database of installed packages.
const StatusPath = "/var/lib/dpkg/status"

// dpkgEntry is one paragraph of the dpkg database.
type dpkgEntry struct {
	control.Paragraph
	Package      string
	Status       string
	Version      string
	Architecture string
	Source       string
}

// parseStatus returns the installed packages ("install ok installed") of a
// dpkg status file, as dpkg-query -W lists them with that status. Packages
// removed with their configuration kept, or never installed, are left out:
// their files are not in the image.
func parseStatus(b []byte) ([]Package, error) {
	var entries []dpkgEntry
	if err := control.Unmarshal(&entries, bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", StatusPath, err)
	}
	var out []Package
	for _, e := range entries {
		if e.Package == "" {
			return nil, fmt.Errorf("parsing %s: a paragraph without Package", StatusPath)
		}
		if !installed(e.Status) {
			continue
		}
		src, _, _ := strings.Cut(e.Source, " ") // "glibc (2.36-9)" names the source version too
		out = append(out, Package{Type: TypeDeb, Name: e.Package, Version: e.Version, Arch: e.Architecture, SourcePackage: src})
	}
	return out, nil
}

// installed reads dpkg's Status: "want flag state", e.g. "install ok installed".
func installed(status string) bool {
	f := strings.Fields(status)
	return len(f) == 3 && f[2] == "installed"
}
