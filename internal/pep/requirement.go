package pep

import (
	"fmt"
	"regexp"
	"strings"
)

// Requirement is a PEP 508 dependency specifier, as pip takes it on its
// command line: name, extras, a version specifier or a URL, and a marker.
type Requirement struct {
	// Name is the project name as written; Normalize it to compare.
	Name string
	// Specifier is the version specifier without spaces (">=1.26,<2"), ""
	// for none.
	Specifier string
	// URL is set for a "name @ URL" requirement.
	URL string
}

var (
	reqName   = `[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?`
	reqExtras = `(?:\[\s*(?:` + reqName + `(?:\s*,\s*` + reqName + `)*)?\s*\])?`
	// A clause: an operator and a version. "===" takes any string without
	// space or comma; the others a PEP 440 version, "==" and "!=" with a
	// trailing ".*".
	reqClause = `(?:===\s*[^\s,;)]+|(?:~=|==|!=|<=|>=|<|>)\s*v?[0-9][A-Za-z0-9.+!_-]*(?:\.\*)?)`
	reqSpec   = `(?:\(\s*` + reqClause + `(?:\s*,\s*` + reqClause + `)*\s*\)|` + reqClause + `(?:\s*,\s*` + reqClause + `)*)?`
	reqRE     = regexp.MustCompile(`^\s*(` + reqName + `)\s*` + reqExtras + `\s*(?:@\s*(\S+)\s*|(` + reqSpec + `))\s*(?:;\s*(\S.*))?$`)
)

// ParseRequirement parses a PEP 508 requirement ("numpy>=1.26,<2",
// "torch[opt]==2.6.0; python_version >= '3.10'", "pkg @ https://...").
// Markers are taken as written, not evaluated.
func ParseRequirement(s string) (Requirement, error) {
	m := reqRE.FindStringSubmatch(s)
	if m == nil {
		return Requirement{}, fmt.Errorf("%q is not a PEP 508 requirement such as \"numpy\", \"numpy==1.26.4\" or \"numpy>=1.26,<2\"", s)
	}
	r := Requirement{Name: m[1], URL: m[2]}
	r.Specifier = strings.Trim(strings.Join(strings.Fields(m[3]), ""), "()")
	if r.URL != "" && !strings.Contains(r.URL, "://") {
		return Requirement{}, fmt.Errorf("%q: %q after '@' is not a URL", s, r.URL)
	}
	return r, nil
}
