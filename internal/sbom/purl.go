package sbom

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/package-url/packageurl-go"

	"imagectl/internal/lock"
)

// PURL returns the package URL of p, a package of inv: both encoders
// (SPDX, CycloneDX) name a package by it.
//
//	pkg:deb/<os-release ID, else debian>/NAME@VERSION?arch=A&distro=<ID>-<VERSION_ID>
//	pkg:pypi/NAME@VERSION
//	pkg:generic/imagectl-init@VERSION?checksum=sha256:...
func (inv *Inventory) PURL(p Package) (string, error) {
	var purl *packageurl.PackageURL
	switch p.Type {
	case TypeDeb:
		q := map[string]string{"arch": p.Arch}
		if inv.OSID != "" && inv.OSVersionID != "" {
			q["distro"] = inv.OSID + "-" + inv.OSVersionID
		}
		ns := inv.OSID
		if ns == "" {
			ns = "debian"
		}
		purl = packageurl.NewPackageURL(packageurl.TypeDebian, ns, p.Name, p.Version, packageurl.QualifiersFromMap(q), "")
	case TypePyPI:
		purl = packageurl.NewPackageURL(packageurl.TypePyPi, "", p.Name, p.Version, nil, "")
	case TypeInit:
		purl = packageurl.NewPackageURL(packageurl.TypeGeneric, "", p.Name, p.Version,
			packageurl.QualifiersFromMap(map[string]string{"checksum": "sha256:" + p.SHA256}), "")
	default:
		return "", fmt.Errorf("package %s: unknown type %q", p.Name, p.Type)
	}
	return purl.ToString(), nil
}

// imagePURL is the pkg:oci package URL of the image repo@digest, and
// whether there is one: an image not pinned by a sha256 digest has none.
func imagePURL(repo, digest string) (string, bool) {
	if alg, _, ok := strings.Cut(digest, ":"); !ok || alg != "sha256" {
		return "", false
	}
	last := repo[strings.LastIndex(repo, "/")+1:]
	return packageurl.NewPackageURL(packageurl.TypeOCI, "", last, digest,
		packageurl.QualifiersFromMap(map[string]string{"repository_url": repo}), "").ToString(), true
}

// baseImage returns the repository and digest (the platform's manifest,
// else the index) of l's base, and whether l has a base.
func baseImage(l *lock.Lock) (repo, digest string, ok bool) {
	if l.Base.Ref == "" {
		return "", "", false
	}
	digest = l.Base.ManifestDigest
	if digest == "" {
		digest = l.Base.IndexDigest
	}
	repo = l.Base.Ref
	if r, err := name.ParseReference(l.Base.Ref); err == nil {
		repo = r.Context().Name()
	}
	return repo, digest, true
}
