package lock

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"imagectl/internal/spec"
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
func Upgrade(ctx context.Context, img spec.Image, old *Lock, opts ...Option) (*Lock, error) {
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
		locked, _, _ := strings.Cut(c.locked, "+")
		if locked != c.spec {
			return nil, fmt.Errorf("image %s: the spec moves the frozen core (%s %s -> %s); --upgrade keeps the core: run imagectl lock without --upgrade to re-lock it", img.Name, c.what, c.locked, c.spec)
		}
	}

	frozen := map[string]bool{}
	if img.Torch != "" {
		frozen["torch"] = true
	}
	for _, f := range img.Frozen {
		frozen[normalize(f)] = true
	}
	var p plan
	locked := map[string]string{}
	for _, w := range old.Pip {
		locked[w.Name] = w.Version
	}
	only := map[string]bool{}
	aptTouched := len(o.packages) == 0
	for _, n := range o.packages {
		_, inPip := locked[normalize(n)]
		inApt := slices.ContainsFunc(old.Apt, func(d Deb) bool { return d.Name == n })
		if !inPip && !inApt {
			return nil, fmt.Errorf("image %s: --package %s is not in the lock", img.Name, n)
		}
		if frozen[normalize(n)] {
			return nil, fmt.Errorf("image %s: --package %s is frozen; --upgrade never moves it", img.Name, n)
		}
		if inPip {
			only[normalize(n)] = true
		}
		if inApt {
			aptTouched = true
		}
	}
	for _, w := range old.Pip {
		if frozen[w.Name] || (len(o.packages) > 0 && !only[w.Name]) {
			p.constraints = append(p.constraints, w.Name+"=="+w.Version)
		}
	}
	if !aptTouched {
		// Only wheels move: the base and the apt closure stay as locked.
		p.keepApt = append([]Deb{}, old.Apt...)
		b := old.Base
		p.keepBase, p.keepEpoch = &b, old.SourceDateEpoch
		py := old.Python
		p.keepPython = &py
	}
	if old.Resolver.SHA256 != "" {
		// The resolver installs every layer: moving it would rebuild them all.
		r := old.Resolver
		p.keepResolver = &r
	}
	l, res, err := resolve(ctx, img, o, p)
	if err != nil {
		if len(p.constraints) > 0 {
			return nil, fmt.Errorf("upgrade holds %s: %w", strings.Join(p.constraints, ", "), err)
		}
		return nil, err
	}
	for _, w := range l.Pip {
		if v, ok := locked[w.Name]; ok && frozen[w.Name] && v != w.Version {
			return nil, &FrozenError{Image: img.Name, Package: w.Name, From: v, To: w.Version, PulledBy: res.requiredBy(w.Name)}
		}
	}
	if l.Core.Python != old.Core.Python {
		return nil, &FrozenError{Image: img.Name, Package: "python", From: old.Core.Python, To: l.Core.Python}
	}
	return l, nil
}
