package resolve

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"imagectl/internal/lock"
	"imagectl/internal/pep"
	"imagectl/internal/spec"
	"imagectl/internal/version"
)

// FrozenError reports an upgrade that would move the frozen core.
type FrozenError struct {
	Image   string
	Package string
	From    string
	To      string
	// PulledBy says which resolved packages require Package, and which of
	// them the spec asked for.
	PulledBy []string
}

func (e *FrozenError) Error() string {
	s := fmt.Sprintf("image %s: the upgrade would move frozen %s %s -> %s", e.Image, e.Package, e.From, e.To)
	if len(e.PulledBy) > 0 {
		s += "; pulled by: " + strings.Join(e.PulledBy, "; ")
	}
	return s
}

// Upgrade re-resolves the periphery of old for the monthly refresh. The
// frozen core (torch, CUDA, the Python minor and the spec's frozen list)
// keeps its locked versions: those are given to pip as constraints, so a
// periphery package that needs a newer core fails with pip's explanation
// naming it. WithPackages limits the upgrade to the named packages; when it
// names no apt package, the base and the apt closure stay as locked.
func Upgrade(ctx context.Context, img spec.Image, old *lock.Lock, opts ...Option) (*lock.Lock, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	if old.Name != img.Name {
		return nil, fmt.Errorf("upgrading %s with the lock of %s", img.Name, old.Name)
	}
	for _, c := range []struct{ what, locked, spec string }{
		{"torch", old.Core.Torch, img.Torch},
		{"cuda", old.Core.CUDA, img.CUDA},
		{"python", old.Core.Python, img.Python},
	} {
		locked, _ := version.SplitLocal(c.locked)
		if locked != c.spec {
			return nil, fmt.Errorf("image %s: the spec moves the frozen core (%s %s -> %s); imagectl lock upgrade keeps the core: run imagectl lock to re-lock it", img.Name, c.what, c.locked, c.spec)
		}
	}

	frozen := map[string]bool{}
	if img.Torch != "" {
		frozen["torch"] = true
	}
	for _, f := range img.Frozen {
		frozen[pep.Normalize(f)] = true
	}
	// One plan per platform, each from that platform's resolution: its own
	// wheels are held as constraints, its own base and debs kept.
	olds := map[string]*lock.Lock{}
	for _, name := range old.PlatformNames() {
		ol, err := old.ForPlatform(name)
		if err != nil {
			return nil, err
		}
		olds[name] = ol
	}
	plats, err := imagePlatforms(img)
	if err != nil {
		return nil, err
	}
	for _, pl := range plats {
		if olds[pl.String()] == nil {
			return nil, fmt.Errorf("image %s: the spec adds platform %s, which the lock does not have (it has %s); imagectl lock upgrade keeps every platform's resolution: run imagectl lock", img.Name, pl, strings.Join(old.PlatformNames(), ", "))
		}
	}
	for _, n := range o.packages {
		found := false
		for _, ol := range olds {
			if slices.ContainsFunc(ol.Pip, func(w lock.Wheel) bool { return w.Name == pep.Normalize(n) }) || slices.ContainsFunc(ol.Apt, func(d lock.Deb) bool { return d.Name == n }) {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("image %s: --package %s is not in the lock", img.Name, n)
		}
		if frozen[pep.Normalize(n)] {
			return nil, fmt.Errorf("image %s: --package %s is frozen; imagectl lock upgrade never moves it", img.Name, n)
		}
	}
	plans := map[string]plan{}
	for name, ol := range olds {
		plans[name] = upgradePlan(ol, o.packages, frozen)
	}
	l, results, err := resolve(ctx, img, o, plans)
	if err != nil {
		var held []string
		for _, pl := range plats {
			held = append(held, plans[pl.String()].constraints...)
		}
		if len(held) > 0 {
			return nil, fmt.Errorf("upgrade holds %s: %w", strings.Join(held, ", "), err)
		}
		return nil, err
	}
	for _, name := range l.PlatformNames() {
		nl, err := l.ForPlatform(name)
		if err != nil {
			return nil, err
		}
		for _, w := range nl.Pip {
			for _, ow := range olds[name].Pip {
				if ow.Name == w.Name && frozen[w.Name] && ow.Version != w.Version {
					return nil, &FrozenError{Image: img.Name, Package: w.Name, From: ow.Version, To: w.Version, PulledBy: results[name].requiredBy(w.Name)}
				}
			}
		}
	}
	if l.Core.Python != old.Core.Python {
		return nil, &FrozenError{Image: img.Name, Package: "python", From: old.Core.Python, To: l.Core.Python}
	}
	return l, l.Seal()
}

// upgradePlan is what the upgrade of one platform's lock ol holds still:
// frozen wheels (and with packages, every wheel not named) as constraints;
// the base and the apt closure when no apt package is named; the resolver.
func upgradePlan(ol *lock.Lock, packages []string, frozen map[string]bool) plan {
	var p plan
	only := map[string]bool{}
	aptTouched := len(packages) == 0
	for _, n := range packages {
		if slices.ContainsFunc(ol.Pip, func(w lock.Wheel) bool { return w.Name == pep.Normalize(n) }) {
			only[pep.Normalize(n)] = true
		}
		if slices.ContainsFunc(ol.Apt, func(d lock.Deb) bool { return d.Name == n }) {
			aptTouched = true
		}
	}
	for _, w := range ol.Pip {
		if frozen[w.Name] || (len(packages) > 0 && !only[w.Name]) {
			p.constraints = append(p.constraints, w.Name+"=="+w.Version)
		}
	}
	if !aptTouched {
		// Only wheels move: the base and the apt closure stay as locked.
		p.keepApt = append([]lock.Deb{}, ol.Apt...)
		b := ol.Base
		p.keepBase, p.keepEpoch = &b, ol.SourceDateEpoch
		py := ol.Python
		p.keepPython = &py
	}
	if ol.Resolver.SHA256 != "" {
		// The resolver installs every layer: moving it would rebuild them all.
		r := ol.Resolver
		p.keepResolver = &r
	}
	return p
}
