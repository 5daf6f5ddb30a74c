package sbom_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-cmp/cmp"
	spdxjson "github.com/spdx/tools-golang/json"

	"imagectl/internal/lock"
	"imagectl/internal/sbom"
	"imagectl/internal/sbom/sbomtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from %s (-want +got):\n%s", name, path, diff)
	}
}

// readInventory is the inventory of the build-shaped test image of l.
func readInventory(t *testing.T, l *lock.Lock) *sbom.Inventory {
	t.Helper()
	img, err := sbomtest.Image(l)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := sbom.Read(context.Background(), img, l)
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	return inv
}

func decodeBOM(t *testing.T, b []byte) *cdx.BOM {
	t.Helper()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(b), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("cyclonedx-go does not decode the BOM: %v\n%s", err, b)
	}
	return &bom
}

// TestCycloneDXGolden: the BOM of the test image is the golden file
// (go test -update rewrites it), and is the same bytes every time.
func TestCycloneDXGolden(t *testing.T) {
	l := testLock()
	inv := readInventory(t, l)
	b, err := sbom.CycloneDX(inv, ref, l)
	if err != nil {
		t.Fatalf("CycloneDX = %v", err)
	}
	golden(t, "cyclonedx.golden.json", b)
	again, _ := sbom.CycloneDX(inv, ref, l)
	if !bytes.Equal(b, again) {
		t.Error("CycloneDX is not deterministic")
	}
}

// TestCycloneDX: the BOM decodes with cyclonedx-go as CycloneDX 1.6, its
// metadata.component is the image, and it lists every package of the
// inventory once, with the package URL SPDX gives it and its sha256.
func TestCycloneDX(t *testing.T) {
	l := testLock()
	inv := readInventory(t, l)
	b, err := sbom.CycloneDX(inv, ref, l)
	if err != nil {
		t.Fatalf("CycloneDX = %v", err)
	}
	bom := decodeBOM(t, b)
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != cdx.SpecVersion1_6 || bom.Version != 1 {
		t.Errorf("BOM = %s %s version %d, want CycloneDX 1.6 version 1", bom.BOMFormat, bom.SpecVersion, bom.Version)
	}
	if !strings.HasPrefix(bom.SerialNumber, "urn:uuid:") {
		t.Errorf("serialNumber = %q, want a urn:uuid", bom.SerialNumber)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil {
		t.Fatalf("no metadata.component:\n%s", b)
	}
	if bom.Metadata.Timestamp != "2025-11-30T00:00:00Z" {
		t.Errorf("timestamp = %q, want the lock's SOURCE_DATE_EPOCH", bom.Metadata.Timestamp)
	}
	img := bom.Metadata.Component
	wantPURL := "pkg:oci/pytorch@sha256:" + strings.Repeat("a", 64) + "?repository_url=registry.example%2Fstaging%2Fpytorch"
	if img.Type != cdx.ComponentTypeContainer || img.Name != l.Name || img.Version != ref.DigestStr() ||
		img.PackageURL != wantPURL || img.BOMRef != wantPURL || hashOf(img) != strings.Repeat("a", 64) {
		t.Errorf("metadata.component = %+v, want the container %s with purl and bom-ref %s and its digest as SHA-256", img, l.Name, wantPURL)
	}
	if img.Pedigree == nil || img.Pedigree.Ancestors == nil || len(*img.Pedigree.Ancestors) != 1 ||
		(*img.Pedigree.Ancestors)[0].PackageURL != "pkg:oci/debian@sha256:"+strings.Repeat("b", 64)+"?repository_url=registry.example%2Fdebian" {
		t.Errorf("image pedigree = %+v, want the base image as its one ancestor", img.Pedigree)
	}
	if bom.Dependencies != nil {
		t.Errorf("dependencies = %+v, want none (the inventory has no dependency graph)", *bom.Dependencies)
	}

	if bom.Components == nil {
		t.Fatal("no components")
	}
	byPURL := map[string]cdx.Component{}
	refs := map[string]bool{img.BOMRef: true, (*img.Pedigree.Ancestors)[0].BOMRef: true}
	for _, c := range *bom.Components {
		if _, dup := byPURL[c.PackageURL]; dup {
			t.Errorf("two components with purl %s", c.PackageURL)
		}
		byPURL[c.PackageURL] = c
		if refs[c.BOMRef] || c.BOMRef == "" {
			t.Errorf("component %s: bom-ref %q empty or not unique", c.Name, c.BOMRef)
		}
		refs[c.BOMRef] = true
	}
	if c := byPURL["pkg:pypi/typing-extensions@4.12.2"]; c.Licenses == nil || (*c.Licenses)[0].Expression != "PSF-2.0" {
		t.Errorf("typing-extensions licenses = %+v, want the PSF-2.0 its METADATA declares", c.Licenses)
	}
	if len(byPURL) != len(inv.Packages) {
		t.Errorf("components = %d, want the inventory's %d packages", len(byPURL), len(inv.Packages))
	}
	for _, p := range inv.Packages {
		purl, err := inv.PURL(p)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := byPURL[purl]
		if !ok {
			t.Errorf("package %s %s (%s): no component with purl %s", p.Name, p.Version, p.Type, purl)
			continue
		}
		if c.Name != p.Name || c.Version != p.Version || hashOf(&c) != p.SHA256 || property(&c, sbom.PropOrigin) != string(p.Origin) {
			t.Errorf("component %s = %s %s sha256 %q origin %q, want %s %s sha256 %q origin %s",
				purl, c.Name, c.Version, hashOf(&c), property(&c, sbom.PropOrigin), p.Name, p.Version, p.SHA256, p.Origin)
		}
		wantType := cdx.ComponentTypeLibrary
		if p.Type == sbom.TypeInit {
			wantType = cdx.ComponentTypeApplication
		}
		if c.Type != wantType {
			t.Errorf("component %s: type %s, want %s", purl, c.Type, wantType)
		}
		var lic string
		if c.Licenses != nil && len(*c.Licenses) == 1 {
			lic = (*c.Licenses)[0].Expression
		}
		if lic != p.License || (p.License == "" && c.Licenses != nil) {
			t.Errorf("component %s: licenses %+v, want the expression %q the inventory has", purl, c.Licenses, p.License)
		}
		if p.URL != "" && (c.ExternalReferences == nil || (*c.ExternalReferences)[0].Type != cdx.ERTypeDistribution || (*c.ExternalReferences)[0].URL != p.URL) {
			t.Errorf("component %s: external references %v, want the distribution %s", purl, c.ExternalReferences, p.URL)
		}
	}
	// The purls the distro and lock give, as a scanner matches them.
	for purl, sum := range map[string]string{
		"pkg:deb/debian/libgomp1@12.2.0-14?arch=i386&distro=debian-12":       strings.Repeat("e", 64),
		"pkg:deb/debian/libc6@2.36-9%2Bdeb12u10?arch=amd64&distro=debian-12": strings.Repeat("f", 64),
		"pkg:deb/debian/bash@5.2.15-2%2Bb7?arch=amd64&distro=debian-12":      "",
		"pkg:pypi/torch@2.6.0%2Bcu124":                                       strings.Repeat("1", 64),
		"pkg:pypi/typing-extensions@4.12.2":                                  strings.Repeat("2", 64),
		"pkg:pypi/pip@" + sbomtest.PipVersion:                                "",
	} {
		c, ok := byPURL[purl]
		if !ok {
			t.Errorf("no component with purl %s", purl)
		} else if got := hashOf(&c); got != sum {
			t.Errorf("%s: sha256 %q, want %q", purl, got, sum)
		}
	}

	// One inventory, two encoders: SPDX names the same packages.
	s, err := sbom.SPDX(inv, ref, l)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := spdxjson.Read(bytes.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	var spdxPURLs, cdxPURLs []string
	for _, p := range doc.Packages[2:] { // the image and its base come first
		spdxPURLs = append(spdxPURLs, p.PackageExternalReferences[0].Locator)
	}
	for purl := range byPURL {
		cdxPURLs = append(cdxPURLs, purl)
	}
	slices.Sort(spdxPURLs)
	slices.Sort(cdxPURLs)
	if diff := cmp.Diff(spdxPURLs, cdxPURLs); diff != "" {
		t.Errorf("SPDX and CycloneDX package URLs differ (-spdx +cyclonedx):\n%s", diff)
	}
}

// TestCycloneDXFields: the deb's source package, an init with Go build
// info, an image without a base and an inventory without os-release.
func TestCycloneDXFields(t *testing.T) {
	l, inv := fieldsInventory()
	b, err := sbom.CycloneDX(inv, ref, l)
	if err != nil {
		t.Fatalf("CycloneDX = %v", err)
	}
	bom := decodeBOM(t, b)
	if bom.Metadata.Component.Pedigree != nil {
		t.Errorf("pedigree = %+v, want none without a base", bom.Metadata.Component.Pedigree)
	}
	comps := *bom.Components
	if len(comps) != 2 {
		t.Fatalf("components = %d, want 2", len(comps))
	}
	if c := comps[0]; c.PackageURL != "pkg:deb/debian/libc6@2.36-9?arch=amd64" || property(&c, sbom.PropDebSource) != "glibc" {
		t.Errorf("deb = %s source %q, want pkg:deb/debian/libc6@2.36-9?arch=amd64 (no os-release: no distro) from source glibc",
			c.PackageURL, property(&c, sbom.PropDebSource))
	}
	if c := comps[1]; c.PackageURL != "pkg:generic/imagectl-init@v0.3.0?checksum=sha256:"+strings.Repeat("4", 64) ||
		c.Description != "the image's init (entrypoint) at /usr/local/bin/imagectl-init; Go go1.26.8, module imagectl" {
		t.Errorf("init = %s %q", c.PackageURL, c.Description)
	}

	// An Ubuntu base: its os-release names the purl's namespace and distro.
	inv.OSID, inv.OSVersionID = "ubuntu", "22.04"
	if b, err = sbom.CycloneDX(inv, ref, l); err != nil {
		t.Fatal(err)
	}
	if got := (*decodeBOM(t, b).Components)[0].PackageURL; got != "pkg:deb/ubuntu/libc6@2.36-9?arch=amd64&distro=ubuntu-22.04" {
		t.Errorf("Ubuntu deb purl = %s, want pkg:deb/ubuntu/libc6@2.36-9?arch=amd64&distro=ubuntu-22.04", got)
	}

	inv.Packages = append(inv.Packages, sbom.Package{Type: "rpm", Name: "glibc"})
	if _, err := sbom.CycloneDX(inv, ref, l); err == nil || !strings.Contains(err.Error(), `package glibc: unknown type "rpm"`) {
		t.Errorf("CycloneDX(an rpm) = %v, want an unknown type error", err)
	}
}

// fieldsInventory is a lock without a base and an inventory without
// os-release, with a deb built from another source package and an init
// with Go build info.
func fieldsInventory() (*lock.Lock, *sbom.Inventory) {
	l := testLock()
	l.Base = lock.Base{}
	return l, &sbom.Inventory{Name: l.Name, Packages: []sbom.Package{
		{Type: sbom.TypeDeb, Name: "libc6", Version: "2.36-9", Arch: "amd64", SourcePackage: "glibc", Origin: sbom.OriginBase},
		{Type: sbom.TypeInit, Name: "imagectl-init", Version: "v0.3.0", Origin: sbom.OriginImagectl, SHA256: strings.Repeat("4", 64),
			Path: "/usr/local/bin/imagectl-init", GoVersion: "go1.26.8", Module: "imagectl"},
	}}
}

func hashOf(c *cdx.Component) string {
	if c.Hashes != nil {
		for _, h := range *c.Hashes {
			if h.Algorithm == cdx.HashAlgoSHA256 {
				return h.Value
			}
		}
	}
	return ""
}

func property(c *cdx.Component, name string) string {
	if c.Properties != nil {
		for _, p := range *c.Properties {
			if p.Name == name {
				return p.Value
			}
		}
	}
	return ""
}
