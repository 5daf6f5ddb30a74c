package sbomtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"imagectl/internal/sbom"
)

var cdxSchema struct {
	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

// ValidateCycloneDX validates the JSON BOM b against the official CycloneDX
// JSON schema of sbom.CycloneDXVersion (formats asserted: what
// Dependency-Track checks an uploaded BOM against), as shipped in the
// cyclonedx-go module's schema/ directory with the SPDX license list and
// JSF schemas it refers to. It finds the module with `go list -m`, so it
// runs where the tests run.
func ValidateCycloneDX(b []byte) error {
	cdxSchema.once.Do(func() { cdxSchema.schema, cdxSchema.err = compileCycloneDXSchema() })
	if cdxSchema.err != nil {
		return cdxSchema.err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("the BOM is not JSON: %w", err)
	}
	return cdxSchema.schema.Validate(doc)
}

func compileCycloneDXSchema() (*jsonschema.Schema, error) {
	// go test puts its own GOROOT/bin first on the test's PATH.
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/CycloneDX/cyclonedx-go").Output()
	if err != nil {
		return nil, fmt.Errorf("finding the cyclonedx-go module (go list -m): %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "schema")
	const base = "http://cyclonedx.org/schema/"
	bom := "bom-" + sbom.CycloneDXVersion.String() + ".schema.json"
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for file, id := range map[string]string{bom: bom, "spdx.schema.json": "spdx.schema.json", "jsf-0.82.schemax.json": "jsf-0.82.schema.json"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
		}
		if err := c.AddResource(base+id, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
		}
	}
	s, err := c.Compile(base + bom)
	if err != nil {
		return nil, fmt.Errorf("compiling the CycloneDX schema %s: %w", bom, err)
	}
	return s, nil
}
