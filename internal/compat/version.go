package compat

import (
	"strconv"
	"strings"
)

// isVersion reports whether s is dotted decimal with n parts (n == 0: any
// number of parts, at least two).
func isVersion(s string, n int) bool {
	parts := strings.Split(s, ".")
	if n == 0 && len(parts) < 2 || n > 0 && len(parts) != n {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 9 {
			return false
		}
		if _, err := strconv.Atoi(p); err != nil || p[0] == '+' || p[0] == '-' {
			return false
		}
	}
	return true
}

// IsVersion reports whether s is a dotted decimal version with n parts
// (n == 0: two or more).
func IsVersion(s string, n int) bool { return isVersion(s, n) }

// CompareVersions compares dotted decimal versions numerically; a missing
// part counts as 0. Parts that are not numbers compare as 0.
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
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

func major(v string) string {
	m, _, _ := strings.Cut(v, ".")
	return m
}
