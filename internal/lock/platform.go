package lock

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"imagectl/internal/compat"
	"imagectl/internal/spec"
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

// resolution is the per-platform part of l (its first platform).
func (l *Lock) resolution() Resolution {
	return Resolution{Platform: l.Base.Platform, Base: l.Base, Python: l.Python, Resolver: l.Resolver, Apt: l.Apt, Pip: l.Pip}
}

// imagePlatforms are img's platforms as the lock resolves them: sorted,
// linux/amd64 when the spec names none.
func imagePlatforms(img spec.Image) ([]v1.Platform, error) {
	names := img.Platforms
	if len(names) == 0 {
		names = []string{compat.DefaultPlatform}
	}
	names = slices.Clone(names)
	slices.Sort(names)
	var ps []v1.Platform
	for _, n := range names {
		if !slices.Contains(compat.Platforms, n) {
			return nil, fmt.Errorf("image %s: platform %q is not one of %s", img.Name, n, strings.Join(compat.Platforms, ", "))
		}
		p, err := v1.ParsePlatform(n)
		if err != nil {
			return nil, fmt.Errorf("image %s: platform %q: %w", img.Name, n, err)
		}
		ps = append(ps, *p)
	}
	return ps, nil
}

// platformRunner runs every Job of one platform's resolution on that platform.
type platformRunner struct {
	Runner
	platform string
}

func (r platformRunner) Run(ctx context.Context, j Job) (map[string][]byte, error) {
	j.Platform = r.platform
	return r.Runner.Run(ctx, j)
}

// CheckPlatformBuilders fails when opts route a platform to a builder of
// its own (WithPlatformBuildkit, WithPlatformRunner) that none of imgs has:
// a --builder for linux/arm64 with only amd64 images is a mistake to
// report, not a builder to ignore. LockAll and UpgradeAll check it; a
// caller of Resolve for several images calls it itself.
func CheckPlatformBuilders(imgs []spec.Image, opts ...Option) error {
	o := &options{}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return err
		}
	}
	have := map[string]bool{}
	for _, img := range imgs {
		ps, err := imagePlatforms(img)
		if err != nil {
			return err
		}
		for _, p := range ps {
			have[p.String()] = true
		}
	}
	for _, p := range slices.Sorted(maps.Keys(o.platforms)) {
		if !have[p] {
			return fmt.Errorf("builder for %s: no image to lock has platform %s (they have %s)", p, p, strings.Join(slices.Sorted(maps.Keys(have)), ", "))
		}
	}
	return nil
}
