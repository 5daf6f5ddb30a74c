package sbom

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/uuid"

	"imagectl/internal/lock"
)

// CycloneDXVersion is the version of the CycloneDX specification that
// CycloneDX writes. cyclonedx-go v0.12.0 writes 1.2 to 1.7; 1.6 rather
// than 1.7 because it is what Dependency-Track (from 4.12) and the common
// scanners take, and it has every field written here
// (metadata.lifecycles and tools.components came in 1.5).
const CycloneDXVersion = cdx.SpecVersion1_6

// Property names (the imagectl namespace of CycloneDX properties).
const (
	// PropOrigin is a component's Origin: base, lock, venv or imagectl.
	PropOrigin = "imagectl:origin"
	// PropDebSource is the Debian source package of a deb, when dpkg names one.
	PropDebSource = "imagectl:deb:source"
	// PropLockDigest and PropSpec are the lock and spec of the image.
	PropLockDigest = "imagectl:lock:digest"
	PropSpec       = "imagectl:spec"
)

// CycloneDX returns inv as a CycloneDX JSON BOM (CycloneDXVersion,
// github.com/CycloneDX/cyclonedx-go) about the image ref built from l,
// from the same inventory as SPDX: metadata.component is the image (type
// container, its pkg:oci package URL as bom-ref, its digest as SHA-256
// hash), with the base image as its pedigree's ancestor; components are
// the inventory's packages, one each, with the package URLs SPDX gives
// them, the lock's sha256 where it pinned them, the download URL as a
// distribution reference, the license expression a Python distribution
// declares, and the origin as the imagectl:origin property. The inventory
// holds no dependency graph and no licenses of debs, so the BOM claims
// none. Timestamp and serial number come from the lock's
// SOURCE_DATE_EPOCH and the image digest, so one image always gives the
// same BOM.
func CycloneDX(inv *Inventory, ref name.Digest, l *lock.Lock) ([]byte, error) {
	refs := bomRefs{}
	root := cdx.Component{
		Type: cdx.ComponentTypeContainer, Name: l.Name, Version: ref.DigestStr(),
		Description: fmt.Sprintf("%s, built from lock %s (spec %s)", ref, l.Digest, l.Spec.Path),
		Properties:  &[]cdx.Property{{Name: PropLockDigest, Value: l.Digest}, {Name: PropSpec, Value: l.Spec.Path}},
	}
	setImageComponent(&root, refs, ref.Context().Name(), ref.DigestStr())
	if repo, d, ok := baseImage(l); ok {
		bc := cdx.Component{Type: cdx.ComponentTypeContainer, Name: l.Base.Ref, Version: d, Description: "base image"}
		setImageComponent(&bc, refs, repo, d)
		root.Pedigree = &cdx.Pedigree{Ancestors: &[]cdx.Component{bc}}
	}

	comps := make([]cdx.Component, 0, len(inv.Packages))
	for _, p := range inv.Packages {
		purl, err := inv.PURL(p)
		if err != nil {
			return nil, err
		}
		c := cdx.Component{BOMRef: refs.next(purl), Type: cdx.ComponentTypeLibrary, Name: p.Name, Version: p.Version, PackageURL: purl}
		if p.SHA256 != "" {
			c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: p.SHA256}}
		}
		if p.License != "" {
			c.Licenses = &cdx.Licenses{{Expression: p.License}}
		}
		if p.URL != "" {
			c.ExternalReferences = &[]cdx.ExternalReference{{Type: cdx.ERTypeDistribution, URL: p.URL}}
		}
		props := []cdx.Property{{Name: PropOrigin, Value: string(p.Origin)}}
		switch p.Type {
		case TypeDeb:
			if p.SourcePackage != "" && p.SourcePackage != p.Name {
				props = append(props, cdx.Property{Name: PropDebSource, Value: p.SourcePackage})
			}
		case TypeInit:
			c.Type = cdx.ComponentTypeApplication
			c.Description = "the image's init (entrypoint) at " + p.Path
			if p.GoVersion != "" {
				c.Description += fmt.Sprintf("; Go %s, module %s", p.GoVersion, p.Module)
			}
		}
		c.Properties = &props
		comps = append(comps, c)
	}

	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://imagectl.dev/cyclonedx/"+l.Name+"/"+ref.DigestStr()+"/"+l.Digest)).String()
	bom.Metadata = &cdx.Metadata{
		Timestamp:  time.Unix(l.SourceDateEpoch, 0).UTC().Format(time.RFC3339),
		Lifecycles: &[]cdx.Lifecycle{{Phase: cdx.LifecyclePhasePostBuild}},
		Tools:      &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "imagectl"}}},
		Component:  &root,
	}
	bom.Components = &comps
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false)
	if err := enc.EncodeVersion(bom, CycloneDXVersion); err != nil {
		return nil, fmt.Errorf("writing the CycloneDX BOM: %w", err)
	}
	return buf.Bytes(), nil
}

// setImageComponent gives an image component its pkg:oci URL (also its
// bom-ref) and its digest as hash; an image not pinned by digest gets a
// bom-ref of its name.
func setImageComponent(c *cdx.Component, refs bomRefs, repo, digest string) {
	purl, ok := imagePURL(repo, digest)
	if !ok {
		c.BOMRef = refs.next("image:" + c.Name)
		return
	}
	c.BOMRef, c.PackageURL = refs.next(purl), purl
	c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: strings.TrimPrefix(digest, "sha256:")}}
}

// bomRefs hands out unique bom-refs: the package URL, with #2, #3... for a
// package URL given twice.
type bomRefs map[string]int

func (r bomRefs) next(s string) string {
	r[s]++
	if n := r[s]; n > 1 {
		return fmt.Sprintf("%s#%d", s, n)
	}
	return s
}
