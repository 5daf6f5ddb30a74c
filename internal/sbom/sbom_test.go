package sbom_test

import (
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	spdxjson "github.com/spdx/tools-golang/json"

	"imagectl/internal/lock"
	"imagectl/internal/sbom"
	"imagectl/internal/sbom/sbomtest"
)

func testLock() *lock.Lock {
	return &lock.Lock{
		SchemaVersion:   lock.SchemaVersion,
		Name:            "pytorch-2.6-cu124",
		Spec:            lock.Source{Path: "specs/pytorch.hcl"},
		SourceDateEpoch: 1764460800,
		Base:            lock.Base{Ref: "registry.example/debian:bookworm", ManifestDigest: "sha256:" + strings.Repeat("b", 64)},
		Apt: []lock.Deb{
			{Name: "libgomp1", Version: "12.2.0-14", Arch: "amd64", URL: "http://mirror/pool/libgomp1_12.2.0-14_amd64.deb", SHA256: strings.Repeat("c", 64)},
			{Name: "libgomp1", Version: "12.2.0-14", Arch: "i386", URL: "http://mirror/pool/libgomp1_12.2.0-14_i386.deb", SHA256: strings.Repeat("e", 64)},
			// A locked upgrade of a base package.
			{Name: "libc6", Version: "2.36-9+deb12u10", Arch: "amd64", URL: "http://mirror/pool/libc6.deb", SHA256: strings.Repeat("f", 64)},
		},
		Pip: []lock.Wheel{
			{Name: "torch", Version: "2.6.0+cu124", Filename: "torch-2.6.0+cu124-cp311-cp311-linux_x86_64.whl", URL: "http://index/torch.whl", SHA256: strings.Repeat("1", 64)},
			{Name: "numpy", Version: "1.26.4", Filename: "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl", URL: "http://index/numpy.whl", SHA256: strings.Repeat("d", 64)},
			{Name: "typing-extensions", Version: "4.12.2", Filename: "typing_extensions-4.12.2-py3-none-any.whl", URL: "http://index/te.whl", SHA256: strings.Repeat("2", 64)},
		},
		Digest: "sha256:" + strings.Repeat("9", 64),
	}
}

var ref, _ = name.NewDigest("registry.example/staging/pytorch@sha256:" + strings.Repeat("a", 64))

func TestReadAndSPDX(t *testing.T) {
	l := testLock()
	img, err := sbomtest.Image(l)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := sbom.Read(context.Background(), img, l)
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	// The base's 6 packages (libc6 upgraded by the lock) and the 2 other
	// locked debs; pip and the 3 wheels; the init.
	if got := inv.Count(sbom.TypeDeb); got != 8 {
		t.Errorf("debs = %d, want 8: %+v", got, inv.Packages)
	}
	if got := inv.Count(sbom.TypePyPI); got != 4 {
		t.Errorf("python packages = %d, want 4 (pip and the 3 wheels): %+v", got, inv.Packages)
	}
	if got := inv.Count(sbom.TypeInit); got != 1 {
		t.Errorf("init = %d, want 1", got)
	}
	if inv.OSID != "debian" || inv.OSVersionID != "12" {
		t.Errorf("os-release = %q %q, want debian 12 (through the /etc/os-release symlink)", inv.OSID, inv.OSVersionID)
	}

	b, err := sbom.SPDX(inv, ref, l)
	if err != nil {
		t.Fatalf("SPDX = %v", err)
	}
	doc, err := spdxjson.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("spdx json.Read = %v\n%s", err, b)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2025-11-30T00:00:00Z" {
		t.Errorf("document = %s created %s, want SPDX-2.3 created at SOURCE_DATE_EPOCH", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	// The image and its base, then the 13 packages.
	if got := len(doc.Packages); got != 2+8+4+1 {
		t.Errorf("SPDX packages = %d, want 15", got)
	}
	purls := map[string]string{} // purl -> sha256
	for _, p := range doc.Packages {
		if len(p.PackageExternalReferences) != 1 || p.PackageExternalReferences[0].RefType != "purl" {
			t.Errorf("package %s: external refs %+v, want one purl", p.PackageName, p.PackageExternalReferences)
			continue
		}
		sum := ""
		for _, c := range p.PackageChecksums {
			if c.Algorithm == "SHA256" {
				sum = c.Value
			}
		}
		purls[p.PackageExternalReferences[0].Locator] = sum
	}
	for purl, sum := range map[string]string{
		"pkg:deb/debian/libgomp1@12.2.0-14?arch=i386&distro=debian-12":                                               strings.Repeat("e", 64),
		"pkg:deb/debian/libc6@2.36-9%2Bdeb12u10?arch=amd64&distro=debian-12":                                         strings.Repeat("f", 64),
		"pkg:deb/debian/bash@5.2.15-2%2Bb7?arch=amd64&distro=debian-12":                                              "",
		"pkg:deb/debian/tzdata@2024b-0%2Bdeb12u1?arch=all&distro=debian-12":                                          "",
		"pkg:pypi/torch@2.6.0%2Bcu124":                                                                               strings.Repeat("1", 64),
		"pkg:pypi/typing-extensions@4.12.2":                                                                          strings.Repeat("2", 64),
		"pkg:pypi/pip@" + sbomtest.PipVersion:                                                                        "",
		"pkg:oci/pytorch@sha256:" + strings.Repeat("a", 64) + "?repository_url=registry.example%2Fstaging%2Fpytorch": strings.Repeat("a", 64),
	} {
		got, ok := purls[purl]
		if !ok {
			t.Errorf("no package with purl %s; have %v", purl, slices.Sorted(maps.Keys(purls)))
		} else if got != sum {
			t.Errorf("%s: sha256 %q, want %q", purl, got, sum)
		}
	}
	var initPURL string
	for p := range purls {
		if strings.HasPrefix(p, "pkg:generic/imagectl-init") {
			initPURL = p
		}
	}
	if !strings.Contains(initPURL, "checksum=sha256:") || purls[initPURL] == "" {
		t.Errorf("init purl %q (sha256 %q), want pkg:generic/imagectl-init with its checksum", initPURL, purls[initPURL])
	}
	// The license a distribution declares; NOASSERTION for the others.
	for _, p := range doc.Packages {
		want := "NOASSERTION"
		if p.PackageName == "typing-extensions" {
			want = "PSF-2.0"
		}
		if p.PackageLicenseDeclared != want || p.PackageLicenseConcluded != "NOASSERTION" {
			t.Errorf("%s: license declared %q concluded %q, want %q and NOASSERTION", p.PackageName, p.PackageLicenseDeclared, p.PackageLicenseConcluded, want)
		}
	}
	// Base packages hang off the base, locked ones off the image.
	contains := map[string]string{}
	for _, r := range doc.Relationships {
		if r.Relationship == "CONTAINS" {
			contains[string(r.RefB.ElementRefID)] = string(r.RefA.ElementRefID)
		}
	}
	if got := contains["deb-bash-amd64"]; got != "Base-registry.example-debian-bookworm" {
		t.Errorf("bash is contained by %q, want the base", got)
	}
	if got := contains["deb-libc6-amd64"]; got != "Image-pytorch-2.6-cu124" {
		t.Errorf("the locked libc6 is contained by %q, want the image", got)
	}

	again, _ := sbom.SPDX(inv, ref, l)
	if !bytes.Equal(b, again) {
		t.Error("SPDX is not deterministic")
	}
}

// TestReadSkipsBigWheelLayers: the torch layer is never read (its wheel
// comes from the lock), the others are.
func TestReadSkipsBigWheelLayers(t *testing.T) {
	l := testLock()
	img, err := sbomtest.Image(l)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	// Layers: base, system, venv, big:torch, periphery, init, runtime.
	if len(layers) != 7 {
		t.Fatalf("test image has %d layers, want 7", len(layers))
	}
	counted := make([]*countingLayer, len(layers))
	var wrapped []v1.Layer
	for i, ly := range layers {
		counted[i] = &countingLayer{Layer: ly}
		wrapped = append(wrapped, counted[i])
	}
	img2, err := mutate.AppendLayers(empty.Image, wrapped...)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := sbom.Read(context.Background(), img2, l)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range counted {
		want := i != 3
		if got := c.opened > 0; got != want {
			t.Errorf("layer %d read = %v, want %v", i, got, want)
		}
	}
	var torch *sbom.Package
	for i, p := range inv.Packages {
		if p.Name == "torch" {
			torch = &inv.Packages[i]
		}
	}
	if torch == nil || torch.Origin != sbom.OriginLock || torch.SHA256 != strings.Repeat("1", 64) {
		t.Errorf("torch = %+v, want the lock's wheel", torch)
	}
}

type countingLayer struct {
	v1.Layer
	opened int
}

func (c *countingLayer) Uncompressed() (io.ReadCloser, error) {
	c.opened++
	return c.Layer.Uncompressed()
}

// TestReadResolver: the lock's pip (its resolver wheel, installed in the
// venv) is a locked package, with the lock's hash.
func TestReadResolver(t *testing.T) {
	l := testLock()
	l.Resolver = lock.Wheel{Name: "pip", Version: "24.3.1", Filename: "pip-24.3.1-py3-none-any.whl", URL: "http://index/pip.whl", SHA256: strings.Repeat("3", 64)}
	img, err := sbomtest.Image(l)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := sbom.Read(context.Background(), img, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range inv.Packages {
		if p.Name == "pip" && (p.Version != "24.3.1" || p.Origin != sbom.OriginLock || p.SHA256 != strings.Repeat("3", 64)) {
			t.Errorf("pip = %+v, want the lock's resolver 24.3.1 with its hash", p)
		}
	}
	// An image whose venv holds another pip is not the build of this lock.
	l.Resolver.Version = "25.0"
	if _, err := sbom.Read(context.Background(), img, l); err == nil || !strings.Contains(err.Error(), "pip is 24.3.1 in the image, the lock has 25.0") {
		t.Errorf("Read(another pip) = %v, want a version mismatch", err)
	}
}
