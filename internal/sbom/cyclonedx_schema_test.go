package sbom_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/sbom"
	"imagectl/internal/sbom/sbomtest"
)

// TestCycloneDXSchema: the BOMs (the test image's and one with every
// optional field) are valid against the official CycloneDX schema, and
// the schema check catches a BOM that is not.
func TestCycloneDXSchema(t *testing.T) {
	validate := sbomtest.ValidateCycloneDX
	l := testLock()
	inv := readInventory(t, l)
	b, err := sbom.CycloneDX(inv, ref, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(b); err != nil {
		t.Errorf("the BOM of the test image is not valid CycloneDX %s: %v", sbom.CycloneDXVersion, err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "cyclonedx.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(golden); err != nil {
		t.Errorf("testdata/cyclonedx.golden.json is not valid CycloneDX: %v", err)
	}
	fl, finv := fieldsInventory()
	fb, err := sbom.CycloneDX(finv, ref, fl)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(fb); err != nil {
		t.Errorf("the BOM of an image without a base is not valid CycloneDX: %v", err)
	}
	// Control: a hash that is not hex is refused.
	bad := bytes.Replace(b, []byte(strings.Repeat("f", 64)), []byte("not-a-sha256"), 1)
	if bytes.Equal(bad, b) {
		t.Fatal("the control BOM has no libc6 hash to spoil")
	}
	if err := validate(bad); err == nil {
		t.Error("the schema accepts a BOM with a hash that is not hex: the check checks nothing")
	}
}
