package build

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"

	gateway "github.com/moby/buildkit/frontend/gateway/client"
	fstypes "github.com/tonistiigi/fsutil/types"

	"imagectl/internal/compat"
	"imagectl/internal/dpkg"
	"imagectl/internal/lock"
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
	debs, arch, err := installedDebs([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if len(debs) != 2 || debs[0].Name != "libcublas-12-1" || debs[0].Bytes != 614400<<10 || debs[1].Version != "2.17.1-1+cuda12.1" {
		t.Fatalf("installedDebs = %+v, want libcublas-12-1 (614400 KiB) and libnccl2, not the removed cudart", debs)
	}
	if arch["libcublas-12-1"] != "amd64" || arch["libnccl2"] != "amd64" {
		t.Errorf("installedDebs architectures = %v, want amd64 for both", arch)
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

// fakeRoot is a built root filesystem: its files' contents by path (a
// directory or library is present with any content).
type fakeRoot map[string]string

func (r fakeRoot) ReadFile(_ context.Context, req gateway.ReadRequest) ([]byte, error) {
	if b, ok := r[req.Filename]; ok {
		return []byte(b), nil
	}
	return nil, fmt.Errorf("%s: %w", req.Filename, fs.ErrNotExist)
}

func (r fakeRoot) StatFile(_ context.Context, req gateway.StatRequest) (*fstypes.Stat, error) {
	if _, ok := r[req.Path]; ok {
		return &fstypes.Stat{Path: req.Path}, nil
	}
	return nil, fmt.Errorf("%s: %w", req.Path, fs.ErrNotExist)
}

// TestCUDADuplicatesNeedTheLibraries: a deb counts as the second copy only
// when a library its file list names is in the root. The H200 run of
// 2026-12-02 reported 12 libraries twice on a fixture base that kept the
// host's dpkg database but not /usr/local, where 10 of those debs' files
// are; cuDNN and NCCL (in /usr/lib) were there.
func TestCUDADuplicatesNeedTheLibraries(t *testing.T) {
	status := `Package: libcublas-13-0
Status: install ok installed
Installed-Size: 582615
Architecture: amd64
Version: 13.1.0.3-1

Package: libnccl2
Status: install ok installed
Installed-Size: 185216
Architecture: amd64
Version: 2.28.3-1+cuda13.0

Package: libcufft-13-0
Status: install ok installed
Installed-Size: 280878
Architecture: amd64
Version: 12.0.0.61-1
`
	cublasLib := "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so.13.1.0.3"
	root := fakeRoot{
		dpkg.StatusPath: status,
		// libcublas's list names its library, which the root lacks.
		dpkg.InfoDir + "/libcublas-13-0.list": "/.\n/usr\n/usr/local/cuda-13.0\n" + cublasLib + "\n/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so.13\n",
		// libnccl2 (Multi-Arch: same) names its list with the architecture; its library is there.
		dpkg.InfoDir + "/libnccl2:amd64.list":         "/.\n/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3\n/usr/share/doc/libnccl2/copyright\n",
		"/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3": "",
		// libcufft has no list at all: dpkg's word stands.
	}
	l := &lock.Lock{Pip: []lock.Wheel{
		{Name: "nvidia-cublas", Version: "13.1.0.3", Size: 597134510},
		{Name: "nvidia-nccl-cu13", Version: "2.28.9", Size: 218304711},
		{Name: "nvidia-cufft", Version: "12.0.0.61", Size: 287647902},
	}}
	var buf bytes.Buffer
	dups, err := cudaDuplicates(context.Background(), root, l, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range dups {
		got = append(got, d.Library)
	}
	if strings.Join(got, ",") != "cufft,nccl" {
		t.Errorf("libraries held twice = %v, want cufft (no file list: dpkg's word) and nccl (its library present), not cublas (its files absent)", got)
	}
	if !strings.Contains(buf.String(), "deb=libcublas-13-0") {
		t.Errorf("the dropped cublas deb is not logged:\n%s", buf.String())
	}
	root[cublasLib] = ""
	if dups, err = cudaDuplicates(context.Background(), root, l, slog.New(slog.DiscardHandler)); err != nil || len(dups) != 3 {
		t.Errorf("with libcublas.so present: %d duplicates, %v; want 3", len(dups), err)
	}
}
