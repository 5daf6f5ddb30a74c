package dpkg

import (
	"strings"
	"testing"
)

const status = `Package: libcublas-12-1
Status: install ok installed
Installed-Size: 614400
Architecture: amd64
Source: cuda-libraries (12.1.3-1)
Version: 12.1.3.1-1

Package: cuda-cudart-12-1
Status: deinstall ok config-files
Version: 12.1.105-1

Package: zlib1g
Status: install ok installed
Architecture: amd64
Version: 1:1.2.13.dfsg-1
`

func TestParseStatus(t *testing.T) {
	es, err := ParseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 {
		t.Fatalf("ParseStatus = %d entries, want all 3 paragraphs", len(es))
	}
	want := []struct {
		pkg, version, arch, source string
		installed                  bool
		bytes                      int64
	}{
		{"libcublas-12-1", "12.1.3.1-1", "amd64", "cuda-libraries (12.1.3-1)", true, 614400 << 10},
		{"cuda-cudart-12-1", "12.1.105-1", "", "", false, 0},
		{"zlib1g", "1:1.2.13.dfsg-1", "amd64", "", true, 0},
	}
	for i, w := range want {
		e := es[i]
		if e.Package != w.pkg || e.Version != w.version || e.Architecture != w.arch || e.Source != w.source {
			t.Errorf("entry %d = %s %s %s %q, want %s %s %s %q", i, e.Package, e.Version, e.Architecture, e.Source, w.pkg, w.version, w.arch, w.source)
		}
		if e.Installed() != w.installed {
			t.Errorf("%s: Installed() = %v, want %v (Status %q)", e.Package, e.Installed(), w.installed, e.Status)
		}
		if e.InstalledBytes() != w.bytes {
			t.Errorf("%s: InstalledBytes() = %d, want %d", e.Package, e.InstalledBytes(), w.bytes)
		}
	}
}

func TestParseStatusError(t *testing.T) {
	_, err := ParseStatus([]byte("Package: a\nnot a field line\n"))
	if err == nil || !strings.Contains(err.Error(), StatusPath) {
		t.Fatalf("ParseStatus(malformed) = %v, want an error naming %s", err, StatusPath)
	}
}

// TestListPaths: a Multi-Arch package's file list carries its architecture
// and is tried first; an arch-independent one has only NAME.list.
func TestListPaths(t *testing.T) {
	if got := strings.Join(ListPaths("libnccl2", "amd64"), " "); got != "/var/lib/dpkg/info/libnccl2:amd64.list /var/lib/dpkg/info/libnccl2.list" {
		t.Errorf("ListPaths(libnccl2, amd64) = %s", got)
	}
	for _, arch := range []string{"", "all"} {
		if got := strings.Join(ListPaths("cuda-toolkit-config-common", arch), " "); got != "/var/lib/dpkg/info/cuda-toolkit-config-common.list" {
			t.Errorf("ListPaths(%q) = %s", arch, got)
		}
	}
}
