package release

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/package-url/packageurl-go"
	spdxjson "github.com/spdx/tools-golang/json"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/pep"
	"imagectl/internal/sbom"
	"imagectl/internal/sbom/sbomtest"
	"imagectl/internal/sign"
)

// checkSBOM reads the SPDX and CycloneDX attestations of ref (signed by
// pub) with spdx/tools-golang's and cyclonedx-go's readers (the CycloneDX
// one also against its JSON schema) and checks, for each, that its Debian
// and Python packages are exactly what dpkg-query and pip list report
// inside the image, run with podman, and that each of l's debs and wheels
// (its pip too) carries the lock's sha256.
func checkSBOM(t *testing.T, ctx context.Context, ref name.Digest, pub string, l *lock.Lock) {
	t.Helper()
	preds, err := sign.VerifyAttestations(ctx, ref, sign.SPDXPredicateType, pub)
	if err != nil {
		t.Fatalf("VerifyAttestations(spdx) = %v", err)
	}
	doc, err := spdxjson.Read(bytes.NewReader(preds[0]))
	if err != nil {
		t.Fatalf("the SPDX attestation does not read as SPDX: %v", err)
	}
	var spdxPkgs []sbomPackage
	for _, p := range doc.Packages {
		sp := sbomPackage{name: p.PackageName, version: p.PackageVersion}
		for _, c := range p.PackageChecksums {
			if c.Algorithm == "SHA256" {
				sp.sha256 = c.Value
			}
		}
		for _, r := range p.PackageExternalReferences {
			if r.RefType == "purl" {
				sp.purl = r.Locator
			}
		}
		spdxPkgs = append(spdxPkgs, sp)
	}

	preds, err = sign.VerifyAttestations(ctx, ref, sign.CycloneDXPredicateType, pub)
	if err != nil {
		t.Fatalf("VerifyAttestations(cyclonedx) = %v", err)
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(preds[0]), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("the CycloneDX attestation does not decode as CycloneDX: %v", err)
	}
	if err := sbomtest.ValidateCycloneDX(preds[0]); err != nil {
		t.Errorf("the CycloneDX attestation is not valid against the CycloneDX %s schema: %v", sbom.CycloneDXVersion, err)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Version != ref.DigestStr() || bom.Components == nil {
		t.Fatalf("the CycloneDX BOM's metadata.component is not the image %s: %+v", ref, bom.Metadata)
	}
	var cdxPkgs []sbomPackage
	for _, c := range *bom.Components {
		cp := sbomPackage{name: c.Name, version: c.Version, purl: c.PackageURL}
		if c.Hashes != nil {
			for _, h := range *c.Hashes {
				if h.Algorithm == cdx.HashAlgoSHA256 {
					cp.sha256 = h.Value
				}
			}
		}
		cdxPkgs = append(cdxPkgs, cp)
	}

	imageDebs, imagePy := imagePackages(t, ctx, ref)
	checkSBOMPackages(t, "SPDX", ref, spdxPkgs, imageDebs, imagePy, l)
	checkSBOMPackages(t, "CycloneDX", ref, cdxPkgs, imageDebs, imagePy, l)
}

// sbomPackage is a package of an SBOM, in either format.
type sbomPackage struct{ name, version, purl, sha256 string }

// checkSBOMPackages checks the packages of one SBOM (format names it)
// against dpkg-query's and pip list's in the image, and against l's hashes.
func checkSBOMPackages(t *testing.T, format string, ref name.Digest, pkgs []sbomPackage, imageDebs, imagePy []string, l *lock.Lock) {
	t.Helper()
	lockSums := map[string]string{} // "deb:name:arch" or "pypi:name" -> sha256
	for _, d := range l.Apt {
		lockSums["deb:"+d.Name+":"+d.Arch] = d.SHA256
	}
	for _, w := range append(slices.Clone(l.Pip), l.Resolver) {
		lockSums["pypi:"+w.Name] = w.SHA256
	}
	var sbomDebs, sbomPy []string
	var inits int
	for _, p := range pkgs {
		purl, err := packageurl.FromString(p.purl)
		if p.purl != "" && err != nil {
			t.Errorf("%s package %s: purl %q: %v", format, p.name, p.purl, err)
			continue
		}
		switch {
		case purl.Type == packageurl.TypeDebian:
			arch := purl.Qualifiers.Map()["arch"]
			sbomDebs = append(sbomDebs, p.name+":"+arch+"="+p.version)
			if want, ok := lockSums["deb:"+p.name+":"+arch]; ok && p.sha256 != want {
				t.Errorf("%s deb %s:%s has sha256 %q, the lock %s", format, p.name, arch, p.sha256, want)
			}
			delete(lockSums, "deb:"+p.name+":"+arch)
		case purl.Type == packageurl.TypePyPi:
			sbomPy = append(sbomPy, p.name+"="+p.version)
			if want, ok := lockSums["pypi:"+p.name]; ok && p.sha256 != want {
				t.Errorf("%s wheel %s has sha256 %q, the lock %s", format, p.name, p.sha256, want)
			}
			delete(lockSums, "pypi:"+p.name)
		case purl.Type == packageurl.TypeGeneric && purl.Name == "imagectl-init":
			inits++
		}
	}
	slices.Sort(sbomDebs)
	slices.Sort(sbomPy)
	t.Logf("%s SBOM of %s: %d packages (%d debs, %d Python %v, %d init); the image: %d debs (dpkg-query -W), %d Python (pip list)",
		format, ref, len(pkgs), len(sbomDebs), len(sbomPy), sbomPy, inits, len(imageDebs), len(imagePy))
	if !slices.Equal(sbomDebs, imageDebs) {
		t.Errorf("%s SBOM debs differ from dpkg-query -W in the image:\nSBOM:  %v\nimage: %v", format, sbomDebs, imageDebs)
	}
	if !slices.Equal(sbomPy, imagePy) {
		t.Errorf("%s SBOM Python packages differ from pip list in the image:\nSBOM:  %v\nimage: %v", format, sbomPy, imagePy)
	}
	if len(lockSums) != 0 {
		t.Errorf("locked artifacts missing from the %s SBOM: %v", format, lockSums)
	}
	if inits != 1 {
		t.Errorf("%s SBOM lists %d init packages, want 1", format, inits)
	}
}

// imagePackages runs dpkg-query -W and pip list in the image ref with
// podman: its installed debs (name:arch=version) and Python
// distributions (normalized name=version), sorted.
func imagePackages(t *testing.T, ctx context.Context, ref name.Digest) ([]string, []string) {
	t.Helper()
	script := `set -e
dpkg-query -W -f '${db:Status-Status} ${Package}:${Architecture}=${Version}\n' > /tmp/dpkg
grep '^installed ' /tmp/dpkg | cut -d' ' -f2
echo ---
if [ -x ` + initconfig.VenvPath + `/bin/pip ]; then ` + initconfig.VenvPath + `/bin/python -m pip list --format json
else python3 -m pip --python ` + initconfig.VenvPath + `/bin/python list --format json; fi`
	args := []string{"run", "--rm", "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}
	if strings.HasPrefix(ref.RegistryStr(), "127.0.0.1:") || strings.HasPrefix(ref.RegistryStr(), "localhost:") {
		args = append(args, "--tls-verify=false")
	}
	out, err := exec.CommandContext(ctx, "podman", append(args, ref.String(), "/bin/sh", "-c", script)...).Output()
	if err != nil {
		t.Fatalf("podman run %s: %v\n%s", ref, err, out)
	}
	dpkgOut, pipOut, ok := strings.Cut(string(out), "---\n")
	if !ok {
		t.Fatalf("podman run output lacks the separator:\n%s", out)
	}
	imageDebs := strings.Fields(dpkgOut)
	var pipList []struct{ Name, Version string }
	if err := json.Unmarshal([]byte(pipOut), &pipList); err != nil {
		t.Fatalf("pip list: %v\n%s", err, pipOut)
	}
	var imagePy []string
	for _, p := range pipList {
		imagePy = append(imagePy, pep.Normalize(p.Name)+"="+p.Version)
	}
	slices.Sort(imageDebs)
	slices.Sort(imagePy)
	return imageDebs, imagePy
}
