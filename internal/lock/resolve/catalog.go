package resolve

import (
	"fmt"
	"strings"

	"imagectl/internal/compat"
	"imagectl/internal/lock"
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

// applyCatalog checks img against c and returns the locked core.
func applyCatalog(c Catalog, img spec.Image) (lock.Core, compat.Resolved, error) {
	req := img.CompatRequest()
	res, problems := c.Check(req)
	if len(problems) > 0 {
		return lock.Core{}, res, &CatalogError{Image: img.Name, Problems: problems}
	}
	p := res.Pins(req)
	return lock.Core{
		CUDA: img.CUDA, Torch: img.Torch, Python: img.Python, TorchVariant: p.TorchVariant, Archs: p.Archs,
		NCCL: p.NCCL, CUDNN: p.CUDNN, DriverFloor: p.DriverFloor,
	}, res, nil
}

// torchIndex is the variant's index URL: the spec's torch_index base plus
// the catalog's path for the variant.
func torchIndex(img spec.Image, w compat.Wheel) (string, error) {
	if img.TorchIndex == "" {
		return "", fmt.Errorf("image %s: torch %s needs torch_index (the base URL of the PyTorch wheel index; the catalog adds %q)", img.Name, img.Torch, w.IndexPath)
	}
	return strings.TrimRight(img.TorchIndex, "/") + "/" + strings.TrimLeft(w.IndexPath, "/"), nil
}
