package compat

import (
	"slices"
	"strconv"
	"strings"
)

// CompareArchs orders GPU architectures numerically by compute capability:
// sm_75 < sm_90 < sm_100 < sm_120 (a string sort puts sm_100 before sm_75).
// Names that are not sm_NN (compute_90, sm_90a) sort by their number, then
// as strings.
func CompareArchs(a, b string) int {
	na, nb := archNumber(a), archNumber(b)
	if na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

// SortArchs sorts archs in place with CompareArchs.
func SortArchs(archs []string) { slices.SortFunc(archs, CompareArchs) }

// archNumber is 90 of "sm_90", "sm_90a" or "compute_90"; -1 without one.
func archNumber(s string) int {
	_, num, ok := strings.Cut(s, "_")
	if !ok {
		return -1
	}
	end := 0
	for end < len(num) && num[end] >= '0' && num[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(num[:end])
	if err != nil {
		return -1
	}
	return n
}
