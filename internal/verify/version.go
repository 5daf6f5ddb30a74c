package verify

import (
	"fmt"
	"strconv"
	"strings"

	"imagectl/internal/version"
)

// cudnnString renders torch.backends.cudnn.version(): 90100 -> "9.1.0"
// (cuDNN 9 encodes major*10000+minor*100+patch), 8902 -> "8.9.2"
// (cuDNN 8 and older encode major*1000+minor*100+patch).
func cudnnString(v int) string {
	if v >= 90000 {
		return fmt.Sprintf("%d.%d.%d", v/10000, (v%10000)/100, v%100)
	}
	return fmt.Sprintf("%d.%d.%d", v/1000, (v%1000)/100, v%100)
}

// cudnnMatches compares the locked cuDNN wheel version ("9.1.0.70") with
// the version torch reports ("9.1.0"): the first three components must match.
func cudnnMatches(locked, reported string) bool {
	l := strings.Split(locked, ".")
	if len(l) > 3 {
		l = l[:3]
	}
	return version.HasPrefix(reported, strings.Join(l, "."))
}

// archSupports reports whether a torch wheel built for archs ("sm_80",
// "sm_90", "compute_90") runs on a GPU of compute capability cc ("9.0"),
// and how: an exact cubin, a cubin of the same major and a lower minor
// (binary compatible), or PTX of a lower or equal capability (JIT).
func archSupports(archs []string, cc string) (bool, string) {
	maj, mnr, ok := splitCC(cc)
	if !ok {
		return false, fmt.Sprintf("unreadable compute capability %q", cc)
	}
	best := ""
	for _, a := range archs {
		kind, num, found := strings.Cut(a, "_")
		if !found {
			continue
		}
		num = strings.TrimRight(num, "af") // sm_90a, sm_100f: family-specific cubins
		if len(num) < 2 {
			continue
		}
		am, err1 := strconv.Atoi(num[:len(num)-1])
		an, err2 := strconv.Atoi(num[len(num)-1:])
		if err1 != nil || err2 != nil {
			continue
		}
		switch {
		case kind == "sm" && am == maj && an == mnr:
			return true, "exact cubin " + a
		case kind == "sm" && am == maj && an < mnr:
			best = "binary-compatible cubin " + a
		case kind == "compute" && (am < maj || am == maj && an <= mnr) && best == "":
			best = "PTX " + a + " (JIT at first use)"
		}
	}
	if best != "" {
		return true, best
	}
	return false, "no cubin or PTX for it among " + strings.Join(archs, " ")
}

func splitCC(cc string) (int, int, bool) {
	a, b, ok := strings.Cut(cc, ".")
	if !ok {
		return 0, 0, false
	}
	maj, err1 := strconv.Atoi(a)
	mnr, err2 := strconv.Atoi(b)
	return maj, mnr, err1 == nil && err2 == nil
}
