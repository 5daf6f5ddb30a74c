package sbom

import (
	"fmt"
	"regexp"

	"imagectl/internal/pep"
)

// parseMetadata reads a dist-info METADATA file (core metadata, in the
// email header format that Python's email.parser reads).
func parseMetadata(p string, b []byte) (Package, error) {
	md, err := pep.ParseMetadata(b)
	if err != nil {
		return Package{}, fmt.Errorf("parsing %s: %w", p, err)
	}
	pkg := Package{Type: TypePyPI, Name: pep.Normalize(md.Name), Version: md.Version}
	// Only the PEP 639 expression: the older License field is free text
	// (often the whole license), no claim to pass on.
	if lic := md.LicenseExpression; licenseExpression.MatchString(lic) && balanced(lic) {
		pkg.License = lic
	}
	return pkg, nil
}

// licenseExpression is the shape of an SPDX license expression: license
// ids (MIT, LicenseRef-x, DocumentRef-d:LicenseRef-x, GPL-2.0+), AND, OR,
// WITH and parentheses.
var licenseExpression = regexp.MustCompile(`^\(*[A-Za-z0-9][A-Za-z0-9.+:-]*\)*( +(AND|OR|WITH) +\(*[A-Za-z0-9][A-Za-z0-9.+:-]*\)*)*$`)

func balanced(s string) bool {
	n := 0
	for _, c := range s {
		switch c {
		case '(':
			n++
		case ')':
			if n--; n < 0 {
				return false
			}
		}
	}
	return n == 0
}
