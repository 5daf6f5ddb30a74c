package build

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"imagectl/internal/compat"
)

// TestInstalledDebsAndReport: the dpkg database of an nvidia/cuda runtime
// image (paragraphs as NVIDIA's debs write them) gives each installed deb
// with its Installed-Size in bytes; removed packages are left out; the
// report names each duplicated library with both sides' bytes.
func TestInstalledDebsAndReport(t *testing.T) {
	status := `Package: libcublas-12-1
Status: install ok installed
Priority: optional
Section: multiverse/devel
Installed-Size: 614400
Maintainer: cudatools <cudatools@nvidia.com>
Architecture: amd64
Version: 12.1.3.1-1
Description: CUBLAS native runtime libraries

Package: libnccl2
Status: install ok installed
Installed-Size: 256000
Architecture: amd64
Version: 2.17.1-1+cuda12.1
Description: NVIDIA Collective Communication Library (NCCL) Runtime
 NCCL (pronounced "Nickel") is a stand-alone library.

Package: cuda-cudart-11-8
Status: deinstall ok config-files
Installed-Size: 700
Version: 11.8.89-1
Description: gone
`
	debs, err := installedDebs([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if len(debs) != 2 || debs[0].Name != "libcublas-12-1" || debs[0].Bytes != 614400<<10 || debs[1].Version != "2.17.1-1+cuda12.1" {
		t.Fatalf("installedDebs = %+v, want libcublas-12-1 (614400 KiB) and libnccl2, not the removed cudart", debs)
	}
	dups := compat.CUDADuplicates(debs, []compat.Package{{Name: "nvidia-cublas-cu12", Version: "12.4.5.8", Bytes: 363 << 20}, {Name: "nvidia-nccl-cu12", Version: "2.21.5", Bytes: 189 << 20}})
	var buf bytes.Buffer
	logCUDADuplicates(slog.New(slog.NewTextHandler(&buf, nil)), "pytorch-2.6-cu121-py3.11", "linux/amd64", dups)
	for _, want := range []string{
		"library=cublas deb=\"libcublas-12-1 12.1.3.1-1\" deb_installed_bytes=629145600 wheel=\"nvidia-cublas-cu12 12.4.5.8\" wheel_bytes=380633088",
		"library=nccl",
		"libraries=2 deb_installed_bytes=891289600 wheel_bytes=578813952",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	logCUDADuplicates(slog.New(slog.NewTextHandler(&buf, nil)), "demo", "linux/amd64", nil)
	if buf.Len() != 0 {
		t.Errorf("no duplicates reported %q, want nothing", buf.String())
	}
}
