package sbom

import (
	"bytes"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
)

// parseMetadata reads a dist-info METADATA file (core metadata, in the
// email header format that Python's email.parser reads).
func parseMetadata(p string, b []byte) (Package, error) {
	// The body (the long description) follows the headers; only they matter.
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		b = b[:i+1]
	}
	m, err := mail.ReadMessage(bytes.NewReader(append(b, '\n')))
	if err != nil {
		return Package{}, fmt.Errorf("parsing %s: %w", p, err)
	}
	name, version := strings.TrimSpace(m.Header.Get("Name")), strings.TrimSpace(m.Header.Get("Version"))
	if name == "" || version == "" {
		return Package{}, fmt.Errorf("parsing %s: Name and Version are required", p)
	}
	return Package{Type: TypePyPI, Name: Normalize(name), Version: version}, nil
}

var pep503 = regexp.MustCompile(`[-_.]+`)

// Normalize is a project name as PEP 503 normalizes it (what the lock
// records and the PURL spec asks for pypi names).
func Normalize(name string) string { return strings.ToLower(pep503.ReplaceAllString(name, "-")) }
