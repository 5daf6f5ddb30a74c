package sbom

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"

	"imagectl/internal/lock"
)

const noAssertion = "NOASSERTION"

// SPDX returns inv as an SPDX 2.3 JSON document about the image ref built
// from l: the document DESCRIBES the image; the image is DESCENDANT_OF its
// base; the base CONTAINS the debs it brought; the image CONTAINS the
// locked debs and wheels, the venv's own distributions and the init. Each
// package carries its package URL (pkg:deb/<os id>/..., pkg:pypi/...,
// pkg:generic/imagectl-init, pkg:oci/... for the images) and, where known,
// its sha256 (the lock's for locked artifacts). The creation time is the
// lock's SOURCE_DATE_EPOCH, so one image always gives the same document.
func SPDX(inv *Inventory, ref name.Digest, l *lock.Lock) ([]byte, error) {
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      l.Name,
		DocumentNamespace: "https://imagectl.dev/spdx/" + l.Name + "/" + ref.DigestStr(),
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "imagectl"}},
			Created:  time.Unix(l.SourceDateEpoch, 0).UTC().Format(time.RFC3339),
		},
	}
	ids := idAllocator{}
	rel := func(a common.ElementID, typ string, b common.ElementID) {
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA: common.MakeDocElementID("", string(a)), RefB: common.MakeDocElementID("", string(b)), Relationship: typ})
	}

	root := &spdx.Package{
		PackageName: l.Name, PackageSPDXIdentifier: ids.next("Image", l.Name), PackageVersion: ref.DigestStr(),
		PackageDownloadLocation: noAssertion, PrimaryPackagePurpose: "CONTAINER",
		PackageComment: fmt.Sprintf("%s, built from lock %s (spec %s)", ref, l.Digest, l.Spec.Path),
	}
	if err := setImage(root, ref.Context().Name(), ref.DigestStr()); err != nil {
		return nil, err
	}
	doc.Packages = append(doc.Packages, none(root))
	rel("DOCUMENT", common.TypeRelationshipDescribe, root.PackageSPDXIdentifier)

	base := root.PackageSPDXIdentifier // base debs hang off the base when there is one
	if repo, d, ok := baseImage(l); ok {
		bp := &spdx.Package{PackageName: l.Base.Ref, PackageSPDXIdentifier: ids.next("Base", l.Base.Ref), PackageVersion: d,
			PackageDownloadLocation: noAssertion, PrimaryPackagePurpose: "CONTAINER", PackageComment: "base image"}
		if err := setImage(bp, repo, d); err != nil {
			return nil, err
		}
		doc.Packages = append(doc.Packages, none(bp))
		rel(root.PackageSPDXIdentifier, common.TypeRelationshipDescendantOf, bp.PackageSPDXIdentifier)
		base = bp.PackageSPDXIdentifier
	}

	for _, p := range inv.Packages {
		sp := &spdx.Package{PackageName: p.Name, PackageVersion: p.Version, PackageFileName: p.Filename,
			PackageDownloadLocation: noAssertion, PrimaryPackagePurpose: "LIBRARY"}
		if p.URL != "" {
			sp.PackageDownloadLocation = p.URL
		}
		if p.SHA256 != "" {
			sp.PackageChecksums = []common.Checksum{{Algorithm: common.SHA256, Value: p.SHA256}}
		}
		purl, err := inv.PURL(p)
		if err != nil {
			return nil, err
		}
		switch p.Type {
		case TypeDeb:
			sp.PackageSPDXIdentifier = ids.next("deb", p.Name+"-"+p.Arch)
			if p.SourcePackage != "" && p.SourcePackage != p.Name {
				sp.PackageSourceInfo = "built from the Debian source package " + p.SourcePackage
			}
		case TypePyPI:
			sp.PackageSPDXIdentifier = ids.next("pypi", p.Name)
		case TypeInit:
			sp.PackageSPDXIdentifier = ids.next("init", p.Name)
			sp.PrimaryPackagePurpose = "APPLICATION"
			sp.PackageComment = fmt.Sprintf("the image's init (entrypoint) at %s; Go %s, module %s", p.Path, p.GoVersion, p.Module)
		}
		sp.PackageExternalReferences = []*spdx.PackageExternalReference{{
			Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: purl}}
		doc.Packages = append(doc.Packages, none(sp))
		if p.License != "" {
			sp.PackageLicenseDeclared = p.License // what the distribution declares; nothing is concluded
		}
		parent := root.PackageSPDXIdentifier
		if p.Origin == OriginBase {
			parent = base
		}
		rel(parent, common.TypeRelationshipContains, sp.PackageSPDXIdentifier)
	}
	var buf bytes.Buffer
	if err := spdxjson.Write(doc, &buf); err != nil {
		return nil, fmt.Errorf("writing the SPDX document: %w", err)
	}
	return buf.Bytes(), nil
}

// setImage gives an image package its pkg:oci URL and its digest as checksum.
func setImage(p *spdx.Package, repo, digest string) error {
	purl, ok := imagePURL(repo, digest)
	if !ok {
		return nil // an unpinned base: nothing to say
	}
	p.PackageChecksums = []common.Checksum{{Algorithm: common.SHA256, Value: strings.TrimPrefix(digest, "sha256:")}}
	p.PackageExternalReferences = []*spdx.PackageExternalReference{{
		Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: purl}}
	return nil
}

// none fills the license and copyright fields SPDX 2.3 wants with
// NOASSERTION: imagectl concludes no license (a Python distribution's
// declared one is passed on in PackageLicenseDeclared).
func none(p *spdx.Package) *spdx.Package {
	p.PackageLicenseConcluded, p.PackageLicenseDeclared, p.PackageCopyrightText = noAssertion, noAssertion, noAssertion
	return p
}

var spdxIDBad = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// idAllocator hands out unique SPDX identifiers.
type idAllocator map[string]int

func (a idAllocator) next(prefix, name string) common.ElementID {
	s := prefix + "-" + spdxIDBad.ReplaceAllString(name, "-")
	a[s]++
	if n := a[s]; n > 1 {
		s = fmt.Sprintf("%s-%d", s, n)
	}
	return common.ElementID(s)
}
