package compat

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCatalogFacts(t *testing.T) {
	// The rows shared/FACTS.md states, with their sources.
	for _, tc := range []struct {
		variant, cuda, nccl, cudnn string
	}{
		{"cu118", "11.8", "nvidia-nccl-cu11==2.21.5", "nvidia-cudnn-cu11==9.1.0.70"},
		{"cu124", "12.4", "nvidia-nccl-cu12==2.21.5", "nvidia-cudnn-cu12==9.1.0.70"},
		{"cu126", "12.6", "nvidia-nccl-cu12==2.21.5", "nvidia-cudnn-cu12==9.5.1.17"},
	} {
		w, ok := LookupWheel("2.6.0", tc.variant)
		if !ok {
			t.Errorf("LookupWheel(2.6.0, %s) not found", tc.variant)
			continue
		}
		if w.CUDA != tc.cuda || w.NCCL.String() != tc.nccl || w.CUDNN.String() != tc.cudnn || w.Source == "" || w.IndexPath != "whl/"+tc.variant {
			t.Errorf("LookupWheel(2.6.0, %s) = cuda %s nccl %s cudnn %s index %s source %q; want %s %s %s whl/%s and a source",
				tc.variant, w.CUDA, w.NCCL, w.CUDNN, w.IndexPath, w.Source, tc.cuda, tc.nccl, tc.cudnn, tc.variant)
		}
		if diff := cmp.Diff([]string{"3.9", "3.10", "3.11", "3.12", "3.13"}, w.Python); diff != "" {
			t.Errorf("LookupWheel(2.6.0, %s).Python (-want +got):\n%s", tc.variant, diff)
		}
	}
	// Which 2.6.0 variants publish linux_aarch64 wheels (catalog platforms_source).
	for variant, want := range map[string][]string{
		"cpu": {"linux/amd64", "linux/arm64"}, "cu118": {"linux/amd64"}, "cu124": {"linux/amd64"}, "cu126": {"linux/amd64", "linux/arm64"},
	} {
		w, _ := LookupWheel("2.6.0", variant)
		if diff := cmp.Diff(want, w.Platforms); diff != "" || w.PlatformsSource == "" {
			t.Errorf("LookupWheel(2.6.0, %s).Platforms (-want +got):\n%s (source %q)", variant, diff, w.PlatformsSource)
		}
	}
	if _, ok := LookupWheel("2.6.0", "cu121"); ok {
		t.Errorf("LookupWheel(2.6.0, cu121) found; torch 2.6.0 publishes no cu121 wheel")
	}
	for _, tc := range []struct{ cuda, native, minor string }{
		{"11.8", "520.61.05", "450.80.02"},
		{"12.1", "530.30.02", "525.60.13"},
		{"12.4", "550.54.14", "525.60.13"},
		{"12.6", "560.28.03", "525.60.13"},
	} {
		f, ok := LookupDriverFloor(tc.cuda)
		if !ok || f.Native != tc.native || f.MinorCompat != tc.minor || f.Source == "" {
			t.Errorf("LookupDriverFloor(%s) = %+v, %v; want native %s, minor %s, a source", tc.cuda, f, ok, tc.native, tc.minor)
		}
	}
	if p, ok := IndexPath("2.6.0", "cu124"); !ok || p != "whl/cu124" {
		t.Errorf("IndexPath(2.6.0, cu124) = %q, %v", p, ok)
	}
}

func TestDigest(t *testing.T) {
	d := Digest()
	if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Errorf("Digest() = %q, want sha256:<64 hex>", d)
	}
	if Digest() != d {
		t.Errorf("Digest() is not stable")
	}
}

func TestParseRejects(t *testing.T) {
	const tip = `"torch_index_projects":["torch","nvidia-*"],"torch_index_projects_source":"s",`
	const fam = `"family":[{"package":"torchvision","version":"0.21.0"},{"package":"torchaudio","version":"2.6.0"}],"family_source":"s",`
	for _, tc := range []struct{ name, json, want string }{
		{"unknown field", `{"schema":1,"torch":[],"cuda":[],"extra":1}`, "unknown field"},
		{"wrong schema", `{"schema":2,"torch":[],"cuda":[]}`, "schema 2"},
		{"trailing brace", `{"schema":1,"torch":[],"cuda":[]}}`, "trailing data after the catalog"},
		{"wheel without source", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x",` + fam + `"wheels":[{"variant":"cpu","index_path":"whl/cpu","python":["3.11"]}]}],"cuda":[]}`, "source, index_path and python"},
		{"cuda wheel without pins", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x",` + fam + `"wheels":[{"variant":"cu124","cuda":"12.4","index_path":"whl/cu124",` + tip + `"python":["3.11"],"source":"s","platforms":["linux/amd64"],"platforms_source":"s"}]}],"cuda":[]}`, "nccl and cudnn"},
		{"wheel without torch index projects", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x",` + fam + `"wheels":[{"variant":"cpu","index_path":"whl/cpu","python":["3.11"],"source":"s","platforms":["linux/amd64"],"platforms_source":"s"}]}],"cuda":[]}`, "torch_index_projects and"},
		{"torch index project not normalized", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x",` + fam + `"wheels":[{"variant":"cpu","index_path":"whl/cpu","torch_index_projects":["Torch_Vision"],"torch_index_projects_source":"s","python":["3.11"],"source":"s","platforms":["linux/amd64"],"platforms_source":"s"}]}],"cuda":[]}`, `"Torch_Vision"`},
		{"torch index pattern in the middle", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x",` + fam + `"wheels":[{"variant":"cpu","index_path":"whl/cpu","torch_index_projects":["nv*dia"],"torch_index_projects_source":"s","python":["3.11"],"source":"s","platforms":["linux/amd64"],"platforms_source":"s"}]}],"cuda":[]}`, `"nv*dia"`},
		{"wheel without platforms", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x",` + fam + `"wheels":[{"variant":"cpu","index_path":"whl/cpu",` + tip + `"python":["3.11"],"source":"s"}]}],"cuda":[]}`, "platforms and platforms_source"},
		{"wheel on an unknown platform", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x",` + fam + `"wheels":[{"variant":"cpu","index_path":"whl/cpu",` + tip + `"python":["3.11"],"source":"s","platforms":["linux/s390x"],"platforms_source":"s"}]}],"cuda":[]}`, `"linux/s390x"`},
		{"release without family", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x","wheels":[]}],"cuda":[]}`, "family_source is required"},
		{"family without torchaudio", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x","family":[{"package":"torchvision","version":"0.21.0"}],"family_source":"s","wheels":[]}],"cuda":[]}`, "one row each of torchvision and torchaudio"},
		{"family with another project", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x","family":[{"package":"torchvision","version":"0.21.0"},{"package":"transformers","version":"4.48.0"}],"family_source":"s","wheels":[]}],"cuda":[]}`, "transformers==4.48.0"},
		{"family version not x.y.z", `{"schema":1,"torch":[{"version":"2.6.0","variants_source":"x","family":[{"package":"torchvision","version":"0.21"},{"package":"torchaudio","version":"2.6.0"}],"family_source":"s","wheels":[]}],"cuda":[]}`, "torchvision==0.21"},
		{"floor without source", `{"schema":1,"torch":[],"cuda":[{"version":"12.1","native":"530.30.02","minor_compat":"525.60.13"}]}`, `cuda "12.1"`},
	} {
		if _, err := parse([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%s) = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// Every torch release in the catalog names the torchvision and torchaudio
// released with it; the rows the specs and the GPU machine use are these.
func TestFamily(t *testing.T) {
	for _, tc := range []struct{ torch, vision, audio string }{
		{"2.6.0", "0.21.0", "2.6.0"},
		{"2.11.0", "0.26.0", "2.11.0"},
	} {
		r, ok := Release(tc.torch)
		if !ok {
			t.Fatalf("Release(%s) not found", tc.torch)
		}
		if v, ok := r.FamilyVersion("TorchVision"); !ok || v != tc.vision {
			t.Errorf("torch %s: FamilyVersion(TorchVision) = %q, %v; want %s", tc.torch, v, ok, tc.vision)
		}
		if v, ok := r.FamilyVersion("torchaudio"); !ok || v != tc.audio {
			t.Errorf("torch %s: FamilyVersion(torchaudio) = %q, %v; want %s", tc.torch, v, ok, tc.audio)
		}
		if _, ok := r.FamilyVersion("transformers"); ok {
			t.Errorf("torch %s: transformers is not a domain library of torch", tc.torch)
		}
		for _, w := range r.Wheels {
			if !w.FromTorchIndex("torchvision") || !w.FromTorchIndex("torchaudio") {
				t.Errorf("torch %s+%s: the family must come from the PyTorch index alone", tc.torch, w.Variant)
			}
		}
	}
}

func TestFromTorchIndex(t *testing.T) {
	cu124, ok1 := LookupWheel("2.6.0", "cu124")
	cu130, ok2 := LookupWheel("2.11.0", "cu130")
	if !ok1 || !ok2 {
		t.Fatalf("LookupWheel: want torch 2.6.0 cu124 and 2.11.0 cu130 in the catalog")
	}
	for _, tc := range []struct {
		project       string
		want124, w130 bool
	}{
		{"torch", true, true},
		{"TorchVision", true, true},
		{"pytorch_triton", true, true},
		{"nvidia-nccl-cu12", true, true},
		{"nvidia_cudnn_cu13", true, true},
		{"cuda-toolkit", false, true},
		{"cuda_bindings", false, true},
		{"numpy", false, false},
		{"nvidia", false, false},
		{"torchx", false, false},
	} {
		if got := cu124.FromTorchIndex(tc.project); got != tc.want124 {
			t.Errorf("2.6.0 cu124 FromTorchIndex(%q) = %v, want %v", tc.project, got, tc.want124)
		}
		if got := cu130.FromTorchIndex(tc.project); got != tc.w130 {
			t.Errorf("2.11.0 cu130 FromTorchIndex(%q) = %v, want %v", tc.project, got, tc.w130)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		// want are "field: substring" per problem, in order.
		want []string
	}{
		{"cu118 native", Request{CUDA: "11.8", Torch: "2.6.0", Python: "3.11", DriverFloor: "520.61.05"}, nil},
		{"cu124 on 12.1 under minor compat", Request{CUDA: "12.1", Torch: "2.6.0", TorchVariant: "cu124", Python: "3.10", DriverFloor: "525.60.13", NCCL: "2.21.5", CUDNN: "9.1.0.70"}, nil},
		{"cpu image", Request{Torch: "2.6.0", Python: "3.12"}, nil},
		{"no torch, cuda only", Request{CUDA: "12.1", DriverFloor: "525.60.13"}, nil},
		{"no cu121 wheel", Request{CUDA: "12.1", Torch: "2.6.0", DriverFloor: "525.60.13"},
			[]string{`cuda: torch 2.6.0 publishes no cu121 wheel|cu118, cu124, cu126|cuda = "11.8"|torch_variant = "cu124"|driver_floor >= 525.60.13`}},
		{"explicit cu121", Request{CUDA: "12.1", Torch: "2.6.0", TorchVariant: "cu121", DriverFloor: "525.60.13"},
			[]string{"torch_variant: publishes no cu121 wheel"}},
		{"floor below minor compat", Request{CUDA: "12.1", Torch: "2.6.0", TorchVariant: "cu124", DriverFloor: "520.61.05"},
			[]string{"driver_floor: driver_floor 520.61.05 is below 525.60.13|the cu124 wheels (CUDA 12.4) on a CUDA 12.1 base|>= 550.54.14 natively"}},
		{"floor missing", Request{CUDA: "11.8", Torch: "2.6.0"}, []string{"driver_floor: driver_floor is required|450.80.02|520.61.05"}},
		{"floor not a version", Request{CUDA: "11.8", DriverFloor: "new"}, []string{"driver_floor: is not a driver version"}},
		{"nccl and cudnn differ", Request{CUDA: "12.6", Torch: "2.6.0", DriverFloor: "560.28.03", NCCL: "2.20.5", CUDNN: "9.1.0.70"},
			[]string{"nccl: nccl 2.20.5 differs from the NCCL 2.21.5|nvidia-nccl-cu12==2.21.5", "cudnn: cudnn 9.1.0.70 differs from the cuDNN 9.5.1.17|nvidia-cudnn-cu12==9.5.1.17"}},
		{"python too old", Request{Torch: "2.6.0", Python: "3.8"}, []string{"python: not built for Python 3.8|3.9, 3.10, 3.11, 3.12, 3.13"}},
		{"major mix", Request{CUDA: "12.1", Torch: "2.6.0", TorchVariant: "cu118", DriverFloor: "530.30.02"}, []string{"torch_variant: mix two CUDA major versions"}},
		{"cu126 on an 11.8 base names cu118", Request{CUDA: "11.8", Torch: "2.6.0", TorchVariant: "cu126", DriverFloor: "520.61.05"},
			[]string{`torch_variant: mix two CUDA major versions|need a CUDA 12.x base|torch_variant = "cu118"`}},
		{"no cu121 wheel names every newer variant", Request{CUDA: "12.1", Torch: "2.6.0", DriverFloor: "525.60.13"},
			[]string{`cuda: no cu121 wheel|torch_variant = "cu124" or "cu126"`}},
		{"cpu wheel on cuda", Request{CUDA: "11.8", Torch: "2.6.0", TorchVariant: "cpu", DriverFloor: "525.60.13"}, []string{"torch_variant: leaves the GPU unused"}},
		{"cu126 on both platforms", Request{CUDA: "12.6", Torch: "2.6.0", DriverFloor: "560.28.03", Platforms: []string{"linux/amd64", "linux/arm64"}}, nil},
		{"cpu on arm64", Request{Torch: "2.6.0", Python: "3.11", Platforms: []string{"linux/arm64"}}, nil},
		{"cu124 has no arm64 wheel", Request{CUDA: "12.4", Torch: "2.6.0", DriverFloor: "550.54.14", Platforms: []string{"linux/amd64", "linux/arm64"}},
			[]string{"platforms: torch 2.6.0+cu124 publishes no linux/arm64 wheel|for linux/amd64 only|torch 2.6.0 publishes cpu, cu126 wheels|drop linux/arm64 from platforms"}},
		{"cu118 has no arm64 wheel", Request{CUDA: "11.8", Torch: "2.6.0", DriverFloor: "520.61.05", Platforms: []string{"linux/arm64"}},
			[]string{"platforms: torch 2.6.0+cu118 publishes no linux/arm64 wheel|cpu, cu126"}},
		{"unknown torch", Request{Torch: "1.13.1"}, []string{"torch: torch 1.13.1 is not in the compatibility catalog|2.6.0|built into imagectl"}},
		{"unknown cuda", Request{CUDA: "10.2"}, []string{"cuda: CUDA 10.2 is not in the compatibility catalog"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := Check(tc.req)
			if len(got) != len(tc.want) {
				t.Fatalf("Check(%+v) = %d problems %+v, want %d", tc.req, len(got), got, len(tc.want))
			}
			for i, p := range got {
				if strings.Contains(p.Detail, ".json") || strings.Contains(p.Detail, "internal/") {
					t.Errorf("Check(%+v)[%d].Detail = %q names a source file a binary user cannot edit", tc.req, i, p.Detail)
				}
			}
			for i, w := range tc.want {
				field, subs, _ := strings.Cut(w, ": ")
				text := got[i].Summary + " " + got[i].Detail
				if got[i].Field != field {
					t.Errorf("Check(%+v)[%d].Field = %q, want %q", tc.req, i, got[i].Field, field)
				}
				for _, s := range strings.Split(subs, "|") {
					if !strings.Contains(text, s) {
						t.Errorf("Check(%+v)[%d] = %q, want it to contain %q", tc.req, i, text, s)
					}
				}
			}
		})
	}
}

func TestCheckResolved(t *testing.T) {
	res, ps := Check(Request{CUDA: "12.1", Torch: "2.6.0", TorchVariant: "cu124", DriverFloor: "525.60.13"})
	if len(ps) != 0 || !res.MinorCompat || res.FloorCUDA != "12.4" || res.Wheel.Variant != "cu124" {
		t.Errorf("Check(cu124 on 12.1) = %+v, %v; want minor compat measured against 12.4", res, ps)
	}
}

func TestQuery(t *testing.T) {
	ans, err := Query("2.6.0", "12.1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ans.Wheels {
		got = append(got, w.Variant+" "+w.Mode+" "+w.MinDriver)
	}
	want := []string{"cu124 minor-version compatibility 525.60.13", "cu126 minor-version compatibility 525.60.13"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Query(2.6.0, 12.1) wheels (-want +got):\n%s", diff)
	}
	if len(ans.Problems) != 1 || !strings.Contains(ans.Problems[0].Summary, "no cu121 wheel") {
		t.Errorf("Query(2.6.0, 12.1).Problems = %+v, want the cu121 problem", ans.Problems)
	}
	if len(ans.Problems) == 1 && !strings.Contains(ans.Problems[0].Detail, `"cu126"`) {
		t.Errorf("Query(2.6.0, 12.1).Problems[0].Detail = %q, want it to name cu126, which the table lists", ans.Problems[0].Detail)
	}
	if len(ans.DriverFloors) != 1 || ans.DriverFloors[0].CUDA != "12.1" {
		t.Errorf("Query(2.6.0, 12.1).DriverFloors = %+v", ans.DriverFloors)
	}
	all, err := Query("", "")
	if err != nil || len(all.Wheels) != 5 || len(all.DriverFloors) != 5 || len(all.Problems) != 0 { // torch 2.6.0 x4 and 2.11.0+cu130; CUDA 11.8, 12.1, 12.4, 12.6, 13.0
		t.Errorf("Query(\"\", \"\") = %d wheels, %d floors, %v", len(all.Wheels), len(all.DriverFloors), err)
	}
	if _, err := Query("9.9.9", ""); err == nil {
		t.Errorf("Query(9.9.9) = nil error")
	}
	if _, err := Query("", "10.0"); err == nil {
		t.Errorf("Query(cuda 10.0) = nil error")
	}
}

// TestQueryNoDriverFloor: a query asks no driver floor, so it reports no
// driver_floor problem (it used to check a made-up "99999").
func TestQueryNoDriverFloor(t *testing.T) {
	for _, cuda := range []string{"11.8", "12.4", "12.6", "13.0"} {
		t.Run(cuda, func(t *testing.T) {
			ans, err := Query("2.6.0", cuda)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ans.Problems {
				if p.Field == "driver_floor" || strings.Contains(p.Summary, "99999") {
					t.Errorf("Query(2.6.0, %s).Problems = %+v, want no driver_floor problem", cuda, ans.Problems)
				}
			}
		})
	}
}

// TestQueryMinDriver: a native row needs the toolkit's own driver, not the
// minor-version floor (FACTS.md's table).
func TestQueryMinDriver(t *testing.T) {
	for _, tc := range []struct{ torch, cuda, variant, want string }{
		{"2.6.0", "11.8", "cu118", "520.61.05"},
		{"2.6.0", "12.4", "cu124", "550.54.14"},
		{"2.6.0", "12.4", "cu126", "525.60.13"},
	} {
		ans, err := Query(tc.torch, tc.cuda)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, w := range ans.Wheels {
			if w.Variant == tc.variant {
				got = w.MinDriver
			}
		}
		if got != tc.want {
			t.Errorf("Query(%s, %s) %s MinDriver = %q, want %q", tc.torch, tc.cuda, tc.variant, got, tc.want)
		}
	}
}

// TestSortArchs: compute capabilities order numerically, and the catalog
// hands its rows out that way (cu130's sm_75..sm_120).
func TestSortArchs(t *testing.T) {
	got := []string{"sm_100", "sm_120", "sm_75", "sm_80", "sm_86", "sm_90", "sm_90a"}
	SortArchs(got)
	want := []string{"sm_75", "sm_80", "sm_86", "sm_90", "sm_90a", "sm_100", "sm_120"}
	if !slices.Equal(got, want) {
		t.Errorf("SortArchs = %v, want %v", got, want)
	}
	w, ok := LookupWheel("2.11.0", "cu130")
	if !ok {
		t.Fatal("no 2.11.0 cu130 row")
	}
	if first, last := w.Archs[0], w.Archs[len(w.Archs)-1]; first != "sm_75" || last != "sm_120" {
		t.Errorf("catalog 2.11.0 cu130 archs = %v, want sm_75 first and sm_120 last", w.Archs)
	}
}

// TestCUDADuplicates: the libraries an nvidia/cuda runtime base (its debs,
// as hack/upstream's 12.1.1 config names them) and the cu124 wheels both
// carry are found per library with both sides' bytes; the -base flavour
// (cudart and cuda-compat only) shares cudart alone.
func TestCUDADuplicates(t *testing.T) {
	runtimeDebs := []Package{
		{"libc6", "2.35", 13 << 20},
		{"cuda-cudart-12-1", "12.1.105-1", 700 << 10},
		{"cuda-compat-12-1", "530.30.02-1", 100 << 20},
		{"libcublas-12-1", "12.1.3.1-1", 600 << 20},
		{"libnccl2", "2.17.1-1+cuda12.1", 250 << 20},
		{"libnpp-12-1", "12.1.0.40-1", 200 << 20},
		{"cuda-nvtx-12-1", "12.1.105-1", 1 << 20},
	}
	wheels := []Package{
		{"nvidia-cuda-runtime-cu12", "12.4.127", 883 << 10},
		{"nvidia-cublas-cu12", "12.4.5.8", 363 << 20},
		{"nvidia-nccl-cu12", "2.21.5", 189 << 20},
		{"nvidia-nvtx-cu12", "12.4.127", 99 << 10},
		{"numpy", "2.1.0", 16 << 20},
	}
	got := CUDADuplicates(runtimeDebs, wheels)
	var libs []string
	for _, d := range got {
		libs = append(libs, d.Library+":"+d.Deb.Name+"/"+d.Wheel.Name)
	}
	want := []string{"cublas:libcublas-12-1/nvidia-cublas-cu12", "cudart:cuda-cudart-12-1/nvidia-cuda-runtime-cu12",
		"nccl:libnccl2/nvidia-nccl-cu12", "nvtx:cuda-nvtx-12-1/nvidia-nvtx-cu12"}
	if !slices.Equal(libs, want) {
		t.Errorf("CUDADuplicates(runtime debs, cu124 wheels) = %v, want %v", libs, want)
	}
	if got[0].Deb.Bytes != 600<<20 || got[0].Wheel.Bytes != 363<<20 {
		t.Errorf("cublas duplicate = %+v, want both sides' bytes", got[0])
	}
	if base := CUDADuplicates(runtimeDebs[:3], wheels); len(base) != 1 || base[0].Library != "cudart" {
		t.Errorf("CUDADuplicates(-base flavour debs) = %+v, want cudart alone", base)
	}
	if none := CUDADuplicates(runtimeDebs[:1], wheels); len(none) != 0 {
		t.Errorf("CUDADuplicates(no CUDA debs) = %+v, want none", none)
	}
}
