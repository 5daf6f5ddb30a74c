// Package compat is the embedded compatibility catalog: which CUDA variants a
// torch release publishes, the NCCL and cuDNN versions each wheel pins, the
// Python versions and GPU architectures it is built for, and the NVIDIA
// driver floor of each CUDA toolkit, natively and under minor-version
// compatibility. Every row carries its source.
//
// Check applies the catalog to one image's versions; the spec package calls
// it so that lint positions each problem at the attribute that caused it.
package compat

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"imagectl/internal/pep"
	"imagectl/internal/strictjson"
	"imagectl/internal/version"
)

//go:embed catalog.json
var catalogJSON []byte

// Catalog is the whole compatibility catalog.
type Catalog struct {
	Schema int            `json:"schema"`
	Torch  []TorchRelease `json:"torch"`
	CUDA   []DriverFloor  `json:"cuda"`
}

// TorchRelease is one torch release and the wheels it publishes.
type TorchRelease struct {
	Version string `json:"version"`
	// VariantsSource says where the list of published variants comes from.
	VariantsSource string  `json:"variants_source"`
	Wheels         []Wheel `json:"wheels"`
	// Family are the domain libraries released with this torch
	// (torchvision, torchaudio), each built against it alone: another
	// torch breaks them at import or at the first CUDA op
	// (pytorch/vision#4222). They come from the variant's PyTorch index
	// with the variant's local label ("0.21.0+cu124"); FamilySource says
	// where the pairing comes from.
	Family       []Pin  `json:"family"`
	FamilySource string `json:"family_source"`
}

// Wheel is the torch wheel of one release for one variant ("cu124", "cpu").
type Wheel struct {
	// Torch is the release, filled in by the lookups ("2.6.0").
	Torch   string `json:"torch,omitempty"`
	Variant string `json:"variant"`
	// Platforms are the OCI platforms ("linux/amd64", "linux/arm64") the
	// variant publishes wheels for; PlatformsSource says where that comes
	// from and marks what is unconfirmed.
	Platforms       []string `json:"platforms"`
	PlatformsSource string   `json:"platforms_source"`
	// CUDA is the CUDA runtime the wheel is built against; empty for cpu.
	CUDA string `json:"cuda,omitempty"`
	// IndexPath is the variant's path under the PyTorch wheel index
	// ("whl/cu124"); the index's base URL comes from the spec.
	IndexPath string `json:"index_path"`
	// TorchIndexProjects are the projects that come from the variant's
	// PyTorch index alone, never from another index (normalized names; a
	// trailing "*" matches a prefix: "nvidia-*"). The set changes between
	// torch releases (2.11 adds cuda-toolkit and cuda-bindings);
	// TorchIndexProjectsSource says where it comes from.
	TorchIndexProjects       []string `json:"torch_index_projects"`
	TorchIndexProjectsSource string   `json:"torch_index_projects_source"`
	// DefaultIndex marks the variant that a plain "torch==V" from the
	// default Python package index installs.
	DefaultIndex bool  `json:"default_index,omitempty"`
	NCCL         *Pin  `json:"nccl,omitempty"`
	CUDNN        *Pin  `json:"cudnn,omitempty"`
	OtherPins    []Pin `json:"other_pins,omitempty"`
	// Python lists the CPython minor versions wheels are built for.
	Python       []string `json:"python"`
	PythonSource string   `json:"python_source,omitempty"`
	// Archs are the GPU architectures with cubins in the wheel.
	Archs []string `json:"archs,omitempty"`
	// ArchsPTX reports whether the wheel carries PTX for newer GPUs.
	ArchsPTX    bool   `json:"archs_ptx,omitempty"`
	ArchsSource string `json:"archs_source,omitempty"`
	Source      string `json:"source"`
}

// Pin is a package the torch wheel pins with ==.
type Pin struct {
	Package string `json:"package"`
	Version string `json:"version"`
}

func (p *Pin) String() string {
	if p == nil {
		return ""
	}
	return p.Package + "==" + p.Version
}

// DriverFloor is the lowest NVIDIA driver (Linux x86_64) for a CUDA toolkit.
type DriverFloor struct {
	CUDA string `json:"version"`
	// Native is the driver shipped with the toolkit.
	Native string `json:"native"`
	// MinorCompat is the lowest driver under CUDA minor-version compatibility.
	MinorCompat string `json:"minor_compat"`
	Source      string `json:"source"`
}

var catalog = mustLoad(catalogJSON)

func mustLoad(b []byte) *Catalog {
	c, err := parse(b)
	if err != nil {
		panic(fmt.Sprintf("compat: embedded catalog: %v", err))
	}
	return c
}

// parse decodes and validates a catalog.
func parse(b []byte) (*Catalog, error) {
	var c Catalog
	if err := strictjson.Decode(b, &c, "catalog"); err != nil {
		return nil, fmt.Errorf("decoding catalog: %w", err)
	}
	if c.Schema != 1 {
		return nil, fmt.Errorf("catalog schema %d: want 1", c.Schema)
	}
	for i := range c.Torch {
		r := &c.Torch[i]
		if !version.Valid(r.Version, 3) || r.VariantsSource == "" {
			return nil, fmt.Errorf("torch %q: want an x.y.z version and a variants_source", r.Version)
		}
		if err := checkFamily(r); err != nil {
			return nil, fmt.Errorf("torch %s: %w", r.Version, err)
		}
		for j := range r.Wheels {
			w := &r.Wheels[j]
			w.Torch = r.Version
			// Numerically, for every reader; the embedded bytes (and so
			// Digest) keep the order they were written in.
			SortArchs(w.Archs)
			if w.Source == "" || w.IndexPath == "" || len(w.Python) == 0 {
				return nil, fmt.Errorf("torch %s %s: source, index_path and python are required", r.Version, w.Variant)
			}
			if err := checkTorchIndexProjects(w); err != nil {
				return nil, fmt.Errorf("torch %s %s: %w", r.Version, w.Variant, err)
			}
			if len(w.Platforms) == 0 || w.PlatformsSource == "" {
				return nil, fmt.Errorf("torch %s %s: platforms and platforms_source are required", r.Version, w.Variant)
			}
			for _, p := range w.Platforms {
				if !slices.Contains(Platforms, p) {
					return nil, fmt.Errorf("torch %s %s: platform %q is not one of %s", r.Version, w.Variant, p, strings.Join(Platforms, ", "))
				}
			}
			if w.Variant != "cpu" && (w.CUDA == "" || Variant(w.CUDA) != w.Variant || w.NCCL == nil || w.CUDNN == nil) {
				return nil, fmt.Errorf("torch %s %s: a CUDA wheel needs cuda matching its variant, nccl and cudnn", r.Version, w.Variant)
			}
		}
	}
	for _, f := range c.CUDA {
		if !version.Valid(f.CUDA, 2) || !version.Valid(f.Native, 0) || !version.Valid(f.MinorCompat, 0) || f.Source == "" {
			return nil, fmt.Errorf("cuda %q: want x.y, driver versions and a source", f.CUDA)
		}
	}
	return &c, nil
}

func checkTorchIndexProjects(w *Wheel) error {
	if len(w.TorchIndexProjects) == 0 || w.TorchIndexProjectsSource == "" {
		return fmt.Errorf("torch_index_projects and torch_index_projects_source are required")
	}
	for _, p := range w.TorchIndexProjects {
		name, _ := strings.CutSuffix(p, "*")
		if name == "" || pep.Normalize(name) != name || strings.Contains(name, "*") {
			return fmt.Errorf("torch_index_projects: %q is not a normalized project name or a NAME-PREFIX* pattern", p)
		}
	}
	return nil
}

// FamilyPackages are the projects a torch release's Family row pins: the
// domain libraries built against one torch.
var FamilyPackages = []string{"torchvision", "torchaudio"}

func checkFamily(r *TorchRelease) error {
	if r.FamilySource == "" {
		return fmt.Errorf("family_source is required")
	}
	var names []string
	for _, p := range r.Family {
		if !slices.Contains(FamilyPackages, p.Package) || !version.Valid(p.Version, 3) {
			return fmt.Errorf("family: want %s with x.y.z versions, got %s", strings.Join(FamilyPackages, " and "), p.String())
		}
		names = append(names, p.Package)
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(FamilyPackages)); !slices.Equal(names, want) {
		return fmt.Errorf("family: want one row each of %s", strings.Join(FamilyPackages, " and "))
	}
	return nil
}

// FamilyVersion returns the version of the domain library project (any
// spelling) released with this torch; ok is false when project is not one
// of FamilyPackages.
func (r TorchRelease) FamilyVersion(project string) (string, bool) {
	n := pep.Normalize(project)
	for _, p := range r.Family {
		if p.Package == n {
			return p.Version, true
		}
	}
	return "", false
}

// FromTorchIndex reports whether project (any spelling) comes from this
// variant's PyTorch index alone (TorchIndexProjects).
func (w Wheel) FromTorchIndex(project string) bool {
	n := pep.Normalize(project)
	for _, p := range w.TorchIndexProjects {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(n, prefix) || p == n {
			return true
		}
	}
	return false
}

// Digest returns "sha256:<hex>" of the embedded catalog. Locks record it so
// that a catalog change marks them stale.
func Digest() string {
	sum := sha256.Sum256(catalogJSON)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Release returns the catalog's entry for a torch release.
func Release(torch string) (TorchRelease, bool) {
	for _, r := range catalog.Torch {
		if r.Version == torch {
			return r, true
		}
	}
	return TorchRelease{}, false
}

// LookupWheel returns the torch wheel for a release and variant ("cu124").
func LookupWheel(torch, variant string) (Wheel, bool) {
	r, ok := Release(torch)
	if !ok {
		return Wheel{}, false
	}
	for _, w := range r.Wheels {
		if w.Variant == variant {
			return w, true
		}
	}
	return Wheel{}, false
}

// LookupDriverFloor returns the driver floors for a CUDA toolkit ("12.1").
func LookupDriverFloor(cuda string) (DriverFloor, bool) {
	for _, f := range catalog.CUDA {
		if f.CUDA == cuda {
			return f, true
		}
	}
	return DriverFloor{}, false
}

// IndexPath returns the variant's path under the PyTorch wheel index
// ("whl/cu118").
func IndexPath(torch, variant string) (string, bool) {
	w, ok := LookupWheel(torch, variant)
	return w.IndexPath, ok
}

// Variant returns the wheel variant name of a CUDA version: "12.4" -> "cu124".
// An empty CUDA gives "cpu".
func Variant(cuda string) string {
	if cuda == "" {
		return "cpu"
	}
	return "cu" + strings.ReplaceAll(cuda, ".", "")
}

// CUDAOfVariant is Variant's inverse: the CUDA runtime version of a torch
// wheel variant, "cu124" -> "12.4", "cu130" -> "13.0"; "" for "cpu" and
// anything it cannot read.
func CUDAOfVariant(v string) string {
	d, ok := strings.CutPrefix(v, "cu")
	if !ok || len(d) < 2 {
		return ""
	}
	if _, err := strconv.Atoi(d); err != nil {
		return ""
	}
	return d[:len(d)-1] + "." + d[len(d)-1:]
}

// Variants lists the variants a torch release publishes, in catalog order.
func (r TorchRelease) Variants() []string {
	var vs []string
	for _, w := range r.Wheels {
		vs = append(vs, w.Variant)
	}
	return vs
}

func releases() []string {
	var vs []string
	for _, r := range catalog.Torch {
		vs = append(vs, r.Version)
	}
	return vs
}

func cudaVersions() []string {
	var vs []string
	for _, f := range catalog.CUDA {
		vs = append(vs, f.CUDA)
	}
	return vs
}

// Platforms are the OCI platforms imagectl specifies, locks and builds.
var Platforms = []string{"linux/amd64", "linux/arm64"}

// DefaultPlatform is the platform of an image whose spec names none.
const DefaultPlatform = "linux/amd64"

// PublishesPlatform reports whether w has wheels for the OCI platform p.
func (w Wheel) PublishesPlatform(p string) bool { return slices.Contains(w.Platforms, p) }

// VariantsFor lists the variants of r that publish wheels for platform p,
// in catalog order.
func (r TorchRelease) VariantsFor(p string) []string {
	var vs []string
	for _, w := range r.Wheels {
		if w.PublishesPlatform(p) {
			vs = append(vs, w.Variant)
		}
	}
	return vs
}

// supportsPython reports whether w is built for the minor version py.
func (w Wheel) supportsPython(py string) bool { return slices.Contains(w.Python, py) }
