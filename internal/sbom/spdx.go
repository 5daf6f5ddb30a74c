package sbom

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/package-url/packageurl-go"
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
	if l.Base.Ref != "" {
		d := l.Base.ManifestDigest
		if d == "" {
			d = l.Base.IndexDigest
		}
		bp := &spdx.Package{PackageName: l.Base.Ref, PackageSPDXIdentifier: ids.next("Base", l.Base.Ref), PackageVersion: d,
			PackageDownloadLocation: noAssertion, PrimaryPackagePurpose: "CONTAINER", PackageComment: "base image"}
		repo := l.Base.Ref
		if r, err := name.ParseReference(l.Base.Ref); err == nil {
			repo = r.Context().Name()
		}
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
		var purl *packageurl.PackageURL
		switch p.Type {
		case TypeDeb:
			sp.PackageSPDXIdentifier = ids.next("deb", p.Name+"-"+p.Arch)
			q := map[string]string{"arch": p.Arch}
			if inv.OSID != "" && inv.OSVersionID != "" {
				q["distro"] = inv.OSID + "-" + inv.OSVersionID
			}
			ns := inv.OSID
			if ns == "" {
				ns = "debian"
			}
			purl = packageurl.NewPackageURL(packageurl.TypeDebian, ns, p.Name, p.Version, packageurl.QualifiersFromMap(q), "")
			if p.SourcePackage != "" && p.SourcePackage != p.Name {
				sp.PackageSourceInfo = "built from the Debian source package " + p.SourcePackage
			}
		case TypePyPI:
			sp.PackageSPDXIdentifier = ids.next("pypi", p.Name)
			purl = packageurl.NewPackageURL(packageurl.TypePyPi, "", p.Name, p.Version, nil, "")
		case TypeInit:
			sp.PackageSPDXIdentifier = ids.next("init", p.Name)
			sp.PrimaryPackagePurpose = "APPLICATION"
			purl = packageurl.NewPackageURL(packageurl.TypeGeneric, "", p.Name, p.Version,
				packageurl.QualifiersFromMap(map[string]string{"checksum": "sha256:" + p.SHA256}), "")
			sp.PackageComment = fmt.Sprintf("the image's init (entrypoint) at %s; Go %s, module %s", p.Path, p.GoVersion, p.Module)
		default:
			return nil, fmt.Errorf("package %s: unknown type %q", p.Name, p.Type)
		}
		sp.PackageExternalReferences = []*spdx.PackageExternalReference{{
			Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: purl.ToString()}}
		doc.Packages = append(doc.Packages, none(sp))
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
	alg, hex, ok := strings.Cut(digest, ":")
	if !ok || alg != "sha256" {
		return nil // an unpinned base: nothing to say
	}
	p.PackageChecksums = []common.Checksum{{Algorithm: common.SHA256, Value: hex}}
	last := repo[strings.LastIndex(repo, "/")+1:]
	purl := packageurl.NewPackageURL(packageurl.TypeOCI, "", last, digest,
		packageurl.QualifiersFromMap(map[string]string{"repository_url": repo}), "")
	p.PackageExternalReferences = []*spdx.PackageExternalReference{{
		Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: purl.ToString()}}
	return nil
}

// none fills the license and copyright fields SPDX 2.3 wants with
// NOASSERTION: imagectl makes no license claims.
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
