// Package dpkg reads dpkg's database of installed packages
// (/var/lib/dpkg/status) the one way both stages that read it need: the
// build (the CUDA libraries a root holds twice, with their installed sizes)
// and the SBOM (the image's debs and their source packages).
package dpkg

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"pault.ag/go/debian/control"
)

// StatusPath is dpkg's database of installed packages.
const StatusPath = "/var/lib/dpkg/status"

// InfoDir holds each installed package's file list, NAME.list (or
// NAME:ARCH.list for a Multi-Arch: same package).
const InfoDir = "/var/lib/dpkg/info"

// ListPaths are the paths package pkg's file list may have, most specific
// first: InfoDir/PKG:ARCH.list (Multi-Arch: same), then InfoDir/PKG.list.
// arch is the package's Architecture; "" or "all" has only the latter.
func ListPaths(pkg, arch string) []string {
	plain := path.Join(InfoDir, pkg+".list")
	if arch == "" || arch == "all" {
		return []string{plain}
	}
	return []string{path.Join(InfoDir, pkg+":"+arch+".list"), plain}
}

// Entry is one paragraph of the dpkg database.
type Entry struct {
	control.Paragraph
	Package       string
	Status        string
	Version       string
	Architecture  string
	Source        string
	InstalledSize string `control:"Installed-Size"`
}

// ParseStatus returns every paragraph of the dpkg status file b, installed
// or not (Installed tells).
func ParseStatus(b []byte) ([]Entry, error) {
	var entries []Entry
	if err := control.Unmarshal(&entries, bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", StatusPath, err)
	}
	return entries, nil
}

// Installed reads dpkg's Status, "want flag state": true for a package
// whose files are in the root ("install ok installed"); false for one
// removed with its configuration kept, or never installed.
func (e Entry) Installed() bool {
	f := strings.Fields(e.Status)
	return len(f) == 3 && f[2] == "installed"
}

// InstalledBytes is Installed-Size (KiB in dpkg's database) in bytes; 0
// when the paragraph has none or it is not a number.
func (e Entry) InstalledBytes() int64 {
	kib, _ := strconv.ParseInt(strings.TrimSpace(e.InstalledSize), 10, 64)
	return kib << 10
}
