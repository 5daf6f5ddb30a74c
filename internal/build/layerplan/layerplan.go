// Package layerplan is the order of an image's layers, read from its lock
// alone: rarely changing layers first (the base, the system packages, the
// venv, one layer per big wheel), so that a monthly refresh only rewrites
// the tail. The build installs by it; the SBOM and the scanner read an image
// back by it. Pure: no daemon, no network.
package layerplan

import (
	"slices"
	"strings"

	"imagectl/internal/lock"
)

// Kind says what one planned layer holds.
type Kind string

// The layer kinds, in the order they appear in an image.
const (
	// KindBase is the base image's own layers (pulled by digest).
	KindBase Kind = "base"
	// KindSystem holds the lock's Debian packages, installed with dpkg.
	KindSystem Kind = "system"
	// KindVenv holds the Python virtual environment, made with the lock's
	// interpreter, and the lock's pip (its resolver wheel) inside it.
	KindVenv Kind = "venv"
	// KindBig holds one big, rarely changing wheel (torch, nvidia-*, triton
	// or a package the lock freezes).
	KindBig Kind = "big"
	// KindPeriphery holds every other wheel.
	KindPeriphery Kind = "periphery"
	// KindInit holds the init binary: it changes only when imagectl-init
	// does, not with the lock.
	KindInit Kind = "init"
	// KindRuntime holds the runtime config the init reads (it names the
	// lock's digest, so it changes with every lock) and the policy's config
	// drop-ins; a few KB, last.
	KindRuntime Kind = "runtime"
)

// Layer is one planned layer.
type Layer struct {
	Kind Kind `json:"kind"`
	// Name identifies the layer in progress output and reports, e.g.
	// "big:torch".
	Name   string       `json:"name"`
	Debs   []lock.Deb   `json:"debs,omitempty"`
	Wheels []lock.Wheel `json:"wheels,omitempty"`
}

// Plan is the ordered list of layers an image is built from: rarely
// changing layers first, so that a monthly refresh only rewrites the tail.
type Plan struct {
	// Base is the base image pinned by its manifest digest, repo@sha256:...
	Base   string  `json:"base"`
	Layers []Layer `json:"layers"`
}

// bigPrefixes and bigNames are the wheels that always get their own layer:
// the PyTorch stack, which is large and only moves with the frozen core.
var (
	bigNames    = []string{"torch", "triton"}
	bigPrefixes = []string{"nvidia-"}
)

// IsBig reports whether the wheel called name (PEP 503 normalized) goes into
// a layer of its own: torch, triton, nvidia-* and the lock's frozen packages.
func IsBig(l *lock.Lock, name string) bool {
	if slices.Contains(bigNames, name) || slices.Contains(l.Frozen, name) {
		return true
	}
	for _, p := range bigPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Of returns the layer plan of l: base; system packages; the venv; one
// layer per big wheel (by name); the periphery wheels; the init and its
// config. Layers with nothing to install are left out. The image config is
// not a layer: it is written last, by the exporter.
func Of(l *lock.Lock) Plan {
	p := Plan{Base: l.Base.Pull()}
	p.Layers = append(p.Layers, Layer{Kind: KindBase, Name: "base"})
	if len(l.Apt) > 0 {
		p.Layers = append(p.Layers, Layer{Kind: KindSystem, Name: "system", Debs: sortedDebs(l.Apt)})
	}
	if len(l.Pip) > 0 {
		p.Layers = append(p.Layers, Layer{Kind: KindVenv, Name: "venv", Wheels: []lock.Wheel{l.Resolver}})
		var periphery []lock.Wheel
		for _, w := range sortedWheels(l.Pip) {
			if IsBig(l, w.Name) {
				p.Layers = append(p.Layers, Layer{Kind: KindBig, Name: "big:" + w.Name, Wheels: []lock.Wheel{w}})
				continue
			}
			periphery = append(periphery, w)
		}
		if len(periphery) > 0 {
			p.Layers = append(p.Layers, Layer{Kind: KindPeriphery, Name: "periphery", Wheels: periphery})
		}
	}
	p.Layers = append(p.Layers, Layer{Kind: KindInit, Name: "init"}, Layer{Kind: KindRuntime, Name: "runtime"})
	return p
}

func sortedDebs(in []lock.Deb) []lock.Deb {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b lock.Deb) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Arch, b.Arch)
	})
	return out
}

func sortedWheels(in []lock.Wheel) []lock.Wheel {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b lock.Wheel) int { return strings.Compare(a.Name, b.Name) })
	return out
}
