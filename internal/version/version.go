// Package version is the one place that orders the dotted numeric versions
// imagectl compares: NVIDIA drivers (580.159.04), CUDA (12.4 < 12.10),
// Python (3.11) and the release segment of a PEP 440 version (pip 24.0,
// torch 2.11.0 of 2.11.0+cu130).
//
// It imports the standard library only, so the container init
// (internal/runtime) can use it too.
package version

import (
	"fmt"
	"strconv"
	"strings"
)

// Numeric is a parsed dotted numeric version, one number per component.
type Numeric []int

// Parse reads a dotted numeric version: one or more components of ASCII
// digits separated by dots ("580.159.04", "12.10", "3"). Leading zeros
// are read as numbers ("04" is 4). Anything else is an error naming s: an
// empty component, a sign, a space, a pre-release ("2.0.0rc1") or a local
// label ("2.11.0+cu130"; see SplitLocal).
func Parse(s string) (Numeric, error) {
	if s == "" {
		return nil, fmt.Errorf("version %q: empty, want numbers separated by dots, like 580.159.04", s)
	}
	parts := strings.Split(s, ".")
	out := make(Numeric, len(parts))
	for i, p := range parts {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return nil, fmt.Errorf("version %q: component %q is not a number, want numbers separated by dots, like 580.159.04", s, p)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("version %q: component %q is out of range", s, p)
		}
		out[i] = n
	}
	return out, nil
}

// Valid reports whether s parses and has n components (n == 0: two or
// more).
func Valid(s string, n int) bool {
	v, err := Parse(s)
	if err != nil {
		return false
	}
	if n == 0 {
		return len(v) >= 2
	}
	return len(v) == n
}

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than
// w. A missing component counts as 0, so 12.4 == 12.4.0.
func (v Numeric) Compare(w Numeric) int {
	for i := 0; i < max(len(v), len(w)); i++ {
		var x, y int
		if i < len(v) {
			x = v[i]
		}
		if i < len(w) {
			y = w[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// String renders v with dots, without leading zeros.
func (v Numeric) String() string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ".")
}

// Compare parses a and b and compares them (see Numeric.Compare); an
// unparsable version is an error naming it, never a silent 0.
func Compare(a, b string) (int, error) {
	va, err := Parse(a)
	if err != nil {
		return 0, err
	}
	vb, err := Parse(b)
	if err != nil {
		return 0, err
	}
	return va.Compare(vb), nil
}

// AtLeast reports whether have >= floor.
func AtLeast(have, floor string) (bool, error) {
	c, err := Compare(have, floor)
	return c >= 0, err
}

// Before reports whether v and min are both dotted numeric versions and v
// is older than min. A version that is not one (a pre-release, a local
// label, garbage) is not before anything.
func Before(v, min string) bool {
	c, err := Compare(v, min)
	return err == nil && c < 0
}

// SplitLocal splits a PEP 440 local version label off: "2.11.0+cu130" is
// ("2.11.0", "cu130"), "2.6.0" is ("2.6.0", "").
func SplitLocal(v string) (public, local string) {
	public, local, _ = strings.Cut(v, "+")
	return public, local
}

// Major is the first component of a dotted version as written: "12" of
// "12.4".
func Major(v string) string {
	m, _, _ := strings.Cut(v, ".")
	return m
}

// HasPrefix reports whether the components of prefix are the leading
// components of v: 3.11 is a prefix of 3.11.2 and of 3.11.0rc1, 3.1 is not
// a prefix of 3.11, and 2.21 is a prefix of 2.21.5. Components that are
// both numbers compare as numbers (04 == 4); others must be equal.
func HasPrefix(v, prefix string) bool {
	vs, ps := strings.Split(v, "."), strings.Split(prefix, ".")
	if len(ps) > len(vs) {
		return false
	}
	for i, p := range ps {
		if p == vs[i] {
			continue
		}
		a, err1 := Parse(p)
		b, err2 := Parse(vs[i])
		if err1 != nil || err2 != nil || a.Compare(b) != 0 {
			return false
		}
	}
	return true
}
