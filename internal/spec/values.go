package spec

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/compat"
	"imagectl/internal/initconfig"
	"imagectl/internal/pep"
	"imagectl/internal/version"
)

// sizeUnits maps a size suffix to its multiplier: SI (kB, MB, ...) and
// IEC (KiB, MiB, ...).
var sizeUnits = map[string]int64{
	"":    1,
	"B":   1,
	"kB":  1000,
	"KB":  1000,
	"MB":  1000 * 1000,
	"GB":  1000 * 1000 * 1000,
	"TB":  1000 * 1000 * 1000 * 1000,
	"KiB": 1 << 10,
	"MiB": 1 << 20,
	"GiB": 1 << 30,
	"TiB": 1 << 40,
}

var sizeRE = regexp.MustCompile(`^\s*(-?[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$`)

// ParseSize parses a byte size: "1GiB", "64MB", "512" (bytes), "1.5GiB".
// Negative sizes and unknown units are errors.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("size %q is not a number with a unit such as \"64MB\" or \"1GiB\"", s)
	}
	mult, ok := sizeUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("size %q has an unknown unit %q (use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, m[2])
	}
	if strings.HasPrefix(m[1], "-") {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(v), nil
}

// ParseDuration parses a Go duration string ("30s", "5m", "168h"). Negative
// durations are errors.
func ParseDuration(s string) (initconfig.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("duration %q is not a Go duration such as \"30s\", \"5m\" or \"168h\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return initconfig.Duration(d), nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

func checkName(s string) error {
	if len(s) > 128 || !nameRE.MatchString(s) {
		return fmt.Errorf("image name %q must be lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 128 characters", s)
	}
	return nil
}

// emptyComponent reports a reference with an empty registry or path
// component ("/x:1", "r//x"), which ggcr's parser lets through.
func emptyComponent(s string) bool {
	return strings.HasPrefix(s, "/") || strings.Contains(s, "//") || strings.HasSuffix(s, "/")
}

func checkBaseRef(s string) error {
	if emptyComponent(s) {
		return fmt.Errorf("base %q has an empty registry or path component (is a variable empty?)", s)
	}
	ref, err := name.ParseReference(s)
	if err != nil {
		return fmt.Errorf("base %q is not a valid image reference: %v", s, err)
	}
	if t, ok := ref.(name.Tag); ok && !strings.HasSuffix(s, ":"+t.TagStr()) {
		return fmt.Errorf("base %q names no tag or digest; pin one (e.g. %s:TAG)", s, s)
	}
	return nil
}

func checkRepo(s string) error {
	if emptyComponent(s) {
		return fmt.Errorf("%q has an empty registry or path component (is a variable empty?)", s)
	}
	if _, err := name.NewRepository(s); err != nil {
		return fmt.Errorf("%q is not a valid repository (registry/path, no tag or digest): %v", s, err)
	}
	return nil
}

func checkVersion(parts int) func(string) error {
	return func(s string) error {
		if version.Valid(s, parts) {
			return nil
		}
		switch parts {
		case 2:
			return fmt.Errorf("%q is not a major.minor version such as \"12.1\"", s)
		case 3:
			return fmt.Errorf("%q is not a major.minor.patch version such as \"2.6.0\"", s)
		}
		return fmt.Errorf("%q is not a dotted version such as \"2.21.5\"", s)
	}
}

func checkPython(s string) error {
	if !version.Valid(s, 2) || !strings.HasPrefix(s, "3.") {
		return fmt.Errorf("python %q is not a Python 3 minor version such as \"3.11\"", s)
	}
	return nil
}

var variantRE = regexp.MustCompile(`^(cpu|cu[0-9]{3,4})$`)

func checkVariant(s string) error {
	if !variantRE.MatchString(s) {
		return fmt.Errorf("torch_variant %q is not \"cpu\" or \"cuNNN\" such as \"cu124\"", s)
	}
	return nil
}

func checkPlatform(s string) error {
	if !slices.Contains(compat.Platforms, s) {
		return fmt.Errorf("platform %q is not one of %s", s, strings.Join(quoteAll(compat.Platforms), ", "))
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

func checkAbsPath(s string) error {
	if !path.IsAbs(s) {
		return fmt.Errorf("%q is not an absolute path", s)
	}
	if path.Clean(s) != s {
		return fmt.Errorf("%q is not clean; write %q", s, path.Clean(s))
	}
	return nil
}

func checkNonEmpty(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("empty string")
	}
	return nil
}

// checkRequirement checks a pip entry: a PEP 508 requirement.
func checkRequirement(s string) error {
	_, err := pep.ParseRequirement(s)
	return err
}

// aptRE is an apt-get package argument: a Debian package name, an optional
// ":arch", and an optional "=version" whose upstream part starts with a
// digit (an epoch "N:" may come first).
var aptRE = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(?::[a-z0-9-]+)?(?:=(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:-]*)?$`)

// checkApt checks an apt entry: "name", "name=version" or "name:arch".
func checkApt(s string) error {
	if !aptRE.MatchString(s) {
		return fmt.Errorf("%q is not a Debian package such as \"jq\" or \"jq=1.6-2.1ubuntu3\" (lowercase name, optional =version)", s)
	}
	return nil
}

func checkOneOf(vals ...string) func(string) error {
	return func(s string) error {
		for _, v := range vals {
			if s == v {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", s, strings.Join(quoteAll(vals), ", "))
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

var (
	userNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// checkUserName accepts a portable login name (useradd's default rule).
func checkUserName(s string) error {
	if !userNameRE.MatchString(s) {
		return fmt.Errorf("%q is not a login name: lowercase letters, digits, _ and -, starting with a letter or _, at most 32", s)
	}
	return nil
}

// checkEnvName accepts an environment variable name.
func checkEnvName(s string) error {
	if !envNameRE.MatchString(s) {
		return fmt.Errorf("%q is not an environment variable name", s)
	}
	return nil
}
