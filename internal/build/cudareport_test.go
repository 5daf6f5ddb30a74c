package build

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/compat"
)

// TestCUDADuplicatesInResultJSON: what each platform's solve found shipped
// twice reaches `build -o json` as cuda_duplicates, per library with the
// deb's and the wheel's name, version and bytes, by platform in the lock's
// order then by library; a build with none has no cuda_duplicates key.
func TestCUDADuplicatesInResultJSON(t *testing.T) {
	amd, arm := &cudaFindings{}, &cudaFindings{}
	targets := []buildTarget{{cuda: amd}, {cuda: arm}, {}}
	cublas := compat.CUDADuplicate{Library: "cublas",
		Deb:   compat.Package{Name: "libcublas-12-1", Version: "12.1.3.1-1", Bytes: 614400 << 10},
		Wheel: compat.Package{Name: "nvidia-cublas-cu12", Version: "12.4.5.8", Bytes: 363 << 20}}
	nccl := compat.CUDADuplicate{Library: "nccl",
		Deb:   compat.Package{Name: "libnccl2", Version: "2.17.1-1+cuda12.1", Bytes: 256000 << 10},
		Wheel: compat.Package{Name: "nvidia-nccl-cu12", Version: "2.21.5", Bytes: 189 << 20}}
	arm.set("linux/arm64", []compat.CUDADuplicate{cublas})
	amd.set("linux/amd64", []compat.CUDADuplicate{cublas}) // replaced by the next set: a rerun of the build function
	amd.set("linux/amd64", []compat.CUDADuplicate{nccl, cublas})

	b, err := json.Marshal(&Result{Digest: "sha256:abc", CUDADuplicates: cudaDuplicatesOf(targets)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		CUDADuplicates []map[string]any `json:"cuda_duplicates"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	pkg := func(name, version string, bytes int64) map[string]any {
		return map[string]any{"name": name, "version": version, "bytes": float64(bytes)}
	}
	want := []map[string]any{
		{"platform": "linux/amd64", "library": "cublas", "deb": pkg("libcublas-12-1", "12.1.3.1-1", 629145600), "wheel": pkg("nvidia-cublas-cu12", "12.4.5.8", 380633088)},
		{"platform": "linux/amd64", "library": "nccl", "deb": pkg("libnccl2", "2.17.1-1+cuda12.1", 262144000), "wheel": pkg("nvidia-nccl-cu12", "2.21.5", 198180864)},
		{"platform": "linux/arm64", "library": "cublas", "deb": pkg("libcublas-12-1", "12.1.3.1-1", 629145600), "wheel": pkg("nvidia-cublas-cu12", "12.4.5.8", 380633088)},
	}
	if diff := cmp.Diff(want, got.CUDADuplicates); diff != "" {
		t.Errorf("build -o json cuda_duplicates (-want +got):\n%s\n%s", diff, b)
	}

	b, err = json.Marshal(&Result{Digest: "sha256:abc", CUDADuplicates: cudaDuplicatesOf([]buildTarget{{cuda: &cudaFindings{}}, {}})})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "cuda_duplicates") {
		t.Errorf("a build with nothing shipped twice: %s, want no cuda_duplicates", b)
	}
}
