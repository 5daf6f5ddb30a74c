package lock

import (
	"fmt"
	"strings"

	"imagectl/internal/compat"
	"imagectl/internal/spec"
)

// Catalog is what the lock takes from the compatibility catalog.
type Catalog interface {
	// Digest identifies the catalog; locks record it.
	Digest() string
	// Check applies the catalog's rules to one image's versions.
	Check(compat.Request) (compat.Resolved, []compat.Problem)
}

type embeddedCatalog struct{}

func (embeddedCatalog) Digest() string { return compat.Digest() }
func (embeddedCatalog) Check(r compat.Request) (compat.Resolved, []compat.Problem) {
	return compat.Check(r)
}

func defaultCatalog() Catalog { return embeddedCatalog{} }

// CatalogError reports that an image breaks a compatibility rule.
type CatalogError struct {
	Image    string
	Problems []compat.Problem
}

func (e *CatalogError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "image %s breaks the compatibility catalog:", e.Image)
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  %s: %s", p.Field, p.Summary)
		if p.Detail != "" {
			fmt.Fprintf(&b, " (%s)", p.Detail)
		}
	}
	return b.String()
}

func request(img spec.Image) compat.Request {
	return compat.Request{
		CUDA: img.CUDA, Torch: img.Torch, TorchVariant: img.TorchVariant, Python: img.Python,
		NCCL: img.NCCL, CUDNN: img.CUDNN, DriverFloor: img.DriverFloor, Platforms: img.Platforms,
	}
}

// applyCatalog checks img against c and returns the locked core.
func applyCatalog(c Catalog, img spec.Image) (Core, compat.Resolved, error) {
	res, problems := c.Check(request(img))
	if len(problems) > 0 {
		return Core{}, res, &CatalogError{Image: img.Name, Problems: problems}
	}
	core := Core{
		CUDA: img.CUDA, Torch: img.Torch, Python: img.Python,
		NCCL: img.NCCL, CUDNN: img.CUDNN, DriverFloor: img.DriverFloor,
	}
	if img.Torch != "" {
		core.TorchVariant = res.Wheel.Variant
		core.Archs = append([]string(nil), res.Wheel.Archs...)
		if core.NCCL == "" && res.Wheel.NCCL != nil {
			core.NCCL = res.Wheel.NCCL.Version
		}
		if core.CUDNN == "" && res.Wheel.CUDNN != nil {
			core.CUDNN = res.Wheel.CUDNN.Version
		}
	}
	if core.DriverFloor == "" && res.Floor.MinorCompat != "" {
		core.DriverFloor = res.Floor.MinorCompat
	}
	return core, res, nil
}

// torchIndex is the variant's index URL: the spec's torch_index base plus
// the catalog's path for the variant.
func torchIndex(img spec.Image, w compat.Wheel) (string, error) {
	if img.TorchIndex == "" {
		return "", fmt.Errorf("image %s: torch %s needs torch_index (the base URL of the PyTorch wheel index; the catalog adds %q)", img.Name, img.Torch, w.IndexPath)
	}
	return strings.TrimRight(img.TorchIndex, "/") + "/" + strings.TrimLeft(w.IndexPath, "/"), nil
}
