package lock

import (
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// PlatformNames lists the lock's platforms: the first one's (Base.Platform),
// then those of Platforms, in order.
func (l *Lock) PlatformNames() []string {
	ps := []string{l.Base.Platform}
	for _, r := range l.Platforms {
		ps = append(ps, r.Platform)
	}
	return ps
}

// PlatformName is p as a lock names its platforms: "os/arch" or
// "os/arch/variant" (Base.Platform, Resolution.Platform, the keys of
// ForPlatform). It is v1.Platform.String for every platform a lock has
// (compat.Platforms through v1.ParsePlatform); unlike String it leaves out
// p's OSVersion and OSFeatures, so an image's platform read from a registry
// is named as the lock names it. A nil p is "".
func PlatformName(p *v1.Platform) string {
	if p == nil {
		return ""
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ParsePlatformName parses s, a platform as a flag or an option names one
// (--builder linux/arm64=..., WithPlatformBuildkit): OS/ARCH[/VARIANT],
// both OS and ARCH given, at most two slashes. It returns the platform as
// v1.Platform.String writes it, the key its builder is found by.
func ParsePlatformName(s string) (string, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" || strings.Count(s, "/") > 2 {
		return "", fmt.Errorf("platform %q: want OS/ARCH[/VARIANT], e.g. linux/arm64", s)
	}
	return p.String(), nil
}

// ForPlatform returns the single-platform lock of platform p: l with Base,
// Python, Resolver, Apt and Pip of p and no further platforms. Its Digest
// stays l's, the lock the image of p is built from. The build, the SBOM and
// verify read a platform's image through it.
func (l *Lock) ForPlatform(p string) (*Lock, error) {
	c := *l
	c.Platforms = nil
	if p == l.Base.Platform {
		return &c, nil
	}
	for _, r := range l.Platforms {
		if r.Platform == p {
			c.Base, c.Python, c.Resolver, c.Apt, c.Pip = r.Base, r.Python, r.Resolver, r.Apt, r.Pip
			return &c, nil
		}
	}
	return nil, fmt.Errorf("lock of %s has no platform %s (it has %s)", l.Name, p, strings.Join(l.PlatformNames(), ", "))
}

// Resolution is the per-platform part of l: its first platform's.
func (l *Lock) Resolution() Resolution {
	return Resolution{Platform: l.Base.Platform, Base: l.Base, Python: l.Python, Resolver: l.Resolver, Apt: l.Apt, Pip: l.Pip}
}
