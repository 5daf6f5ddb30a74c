// Package pep holds the Python packaging rules more than one stage needs:
// the PEP 503 normal form of a project name, the PEP 427 wheel file name,
// the sha256 hex digests indexes and pip reports carry, core metadata (a
// wheel's METADATA) and the PEP 503 simple pages. The lock, the index
// proxy, the SBOM and the test wheelhouse all import it, so a name, a
// wheel file name, a METADATA file or an index page reads the same
// everywhere.
package pep

import (
	"regexp"
	"strings"
)

var nameRun = regexp.MustCompile(`[-_.]+`)

// Normalize is the PEP 503 normal form of a project name: lower case, each
// run of "-", "_" and "." one "-", surrounding space dropped
// ("Foo.Bar__baz" -> "foo-bar-baz"). It is what the lock records, the
// index serves under, and the PURL spec asks for pypi names.
func Normalize(name string) string {
	return strings.ToLower(nameRun.ReplaceAllString(strings.TrimSpace(name), "-"))
}

// Wheel is what a wheel's file name says (PEP 427):
// {distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl.
type Wheel struct {
	// Dist is the distribution field as written in the file name
	// ("nvidia_cudnn_cu12"); the .dist-info directory inside is named
	// Dist-Version.
	Dist string
	// Name is Dist in PEP 503 normal form ("nvidia-cudnn-cu12").
	Name string
	// Version is the version field ("2.11.0+cu130").
	Version string
	// Build is the optional build tag ("1"), "" when there is none.
	Build string
	// Tags is python-abi-platform ("cp312-cp312-manylinux_2_28_x86_64").
	Tags string
}

// ParseWheel splits a wheel file name. It reports false for a name that
// does not end in .whl, has other than five or six dash-separated fields,
// or has an empty field.
func ParseWheel(filename string) (Wheel, bool) {
	base, ok := strings.CutSuffix(filename, ".whl")
	if !ok {
		return Wheel{}, false
	}
	parts := strings.Split(base, "-")
	if len(parts) != 5 && len(parts) != 6 {
		return Wheel{}, false
	}
	for _, p := range parts {
		if p == "" {
			return Wheel{}, false
		}
	}
	n := len(parts)
	w := Wheel{Dist: parts[0], Name: Normalize(parts[0]), Version: parts[1], Tags: strings.Join(parts[n-3:], "-")}
	if n == 6 {
		w.Build = parts[2]
	}
	return w, true
}

// IsSHA256 reports whether s is a sha256 digest in hex: 64 hex digits, in
// either case (indexes and Debian's Release files write lower case, and
// every caller stores the lower-case form).
func IsSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
