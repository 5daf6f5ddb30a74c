package compat

import (
	"fmt"
	"strings"

	"imagectl/internal/version"
)

// Request is what one image asks of the catalog. Empty fields are not set.
type Request struct {
	CUDA         string
	Torch        string
	TorchVariant string
	Python       string
	NCCL         string
	CUDNN        string
	DriverFloor  string
	// Platforms are the image's OCI platforms; empty means DefaultPlatform.
	Platforms []string
}

// Problem is one rule the request breaks. Field names the spec attribute
// where the problem belongs ("cuda", "torch_variant", "driver_floor", ...).
type Problem struct {
	Field   string `json:"field"`
	Summary string `json:"summary"`
	Detail  string `json:"detail"`
}

// Resolved is what the catalog decides for a request that passes Check.
type Resolved struct {
	// Wheel is the torch wheel; zero when the request has no torch.
	Wheel Wheel
	// FloorCUDA is the CUDA version the driver floor is measured against:
	// the newer of the base's and the wheel's.
	FloorCUDA string
	// Floor holds the driver floors of FloorCUDA; zero without CUDA.
	Floor DriverFloor
	// MinorCompat is true when the wheel's CUDA is newer than the base's,
	// so the image runs under CUDA minor-version compatibility.
	MinorCompat bool
}

// Pins is what a request pins once Check has resolved it without
// problems: the request's own versions, completed by the chosen wheel (its
// variant, CUDA archs, NCCL and cuDNN pins) and the driver floor that CUDA
// minor-version compatibility sets. The spec (defaults and diagnostics)
// and the lock (its core) both take them from here.
type Pins struct {
	TorchVariant, NCCL, CUDNN, DriverFloor string
	// Archs are the wheel's CUDA architectures.
	Archs []string
}

// Pins completes req with what res decided. A version req names is kept:
// Check has already refused one that the wheel contradicts.
func (res Resolved) Pins(req Request) Pins {
	p := Pins{TorchVariant: req.TorchVariant, NCCL: req.NCCL, CUDNN: req.CUDNN, DriverFloor: req.DriverFloor}
	if req.Torch != "" {
		p.TorchVariant = res.Wheel.Variant
		p.Archs = append([]string(nil), res.Wheel.Archs...)
		if p.NCCL == "" && res.Wheel.NCCL != nil {
			p.NCCL = res.Wheel.NCCL.Version
		}
		if p.CUDNN == "" && res.Wheel.CUDNN != nil {
			p.CUDNN = res.Wheel.CUDNN.Version
		}
	}
	if p.DriverFloor == "" {
		p.DriverFloor = res.Floor.MinorCompat
	}
	return p
}

// Check applies the catalog to r. It picks nothing on the caller's behalf:
// every ambiguity is a Problem whose Detail names the choices.
func Check(r Request) (Resolved, []Problem) {
	var res Resolved
	var ps []Problem
	add := func(field, summary, detail string) {
		ps = append(ps, Problem{Field: field, Summary: summary, Detail: detail})
	}

	if r.CUDA != "" {
		if _, ok := LookupDriverFloor(r.CUDA); !ok {
			add("cuda", fmt.Sprintf("CUDA %s is not in the compatibility catalog", r.CUDA),
				fmt.Sprintf("The catalog knows the driver floors of CUDA %s; choose one of those. The catalog is built into imagectl: a new CUDA release comes with an imagectl release that adds it (see docs/compat.md, Adding a release).", strings.Join(cudaVersions(), ", ")))
			return res, ps
		}
	}
	res.FloorCUDA = r.CUDA

	if r.Torch != "" {
		w, ok := checkWheel(r, add)
		if !ok {
			return res, ps
		}
		res.Wheel = w
		if w.CUDA != "" && version.Before(r.CUDA, w.CUDA) {
			res.MinorCompat = true
			res.FloorCUDA = w.CUDA
		}
	}

	if res.FloorCUDA == "" {
		return res, ps
	}
	floor, ok := LookupDriverFloor(res.FloorCUDA)
	if !ok {
		add("cuda", fmt.Sprintf("CUDA %s is not in the compatibility catalog", res.FloorCUDA),
			fmt.Sprintf("The catalog knows the driver floors of CUDA %s.", strings.Join(cudaVersions(), ", ")))
		return res, ps
	}
	res.Floor = floor
	what := "CUDA " + res.FloorCUDA
	if res.MinorCompat {
		what = fmt.Sprintf("the %s wheels (CUDA %s) on a CUDA %s base", res.Wheel.Variant, res.FloorCUDA, r.CUDA)
	}
	switch {
	case r.DriverFloor == "":
		add("driver_floor", "driver_floor is required for a CUDA image",
			fmt.Sprintf("Running %s needs an NVIDIA driver >= %s under minor-version compatibility (>= %s natively). Set driver_floor to the lowest driver the image must support; imagectl does not pick one.", what, floor.MinorCompat, floor.Native))
	case !version.Valid(r.DriverFloor, 0):
		add("driver_floor", fmt.Sprintf("driver_floor %q is not a driver version", r.DriverFloor),
			`Write an NVIDIA driver version such as "525.60.13".`)
	case version.Before(r.DriverFloor, floor.MinorCompat):
		add("driver_floor", fmt.Sprintf("driver_floor %s is below %s, the lowest driver that runs %s", r.DriverFloor, floor.MinorCompat, what),
			fmt.Sprintf("Running %s needs an NVIDIA driver >= %s under minor-version compatibility (>= %s natively). Raise driver_floor to at least %s. Source: %s.", what, floor.MinorCompat, floor.Native, floor.MinorCompat, floor.Source))
	}
	return res, ps
}

// checkWheel finds the wheel for r and checks Python and the pins against it.
func checkWheel(r Request, add func(field, summary, detail string)) (Wheel, bool) {
	rel, ok := Release(r.Torch)
	if !ok {
		add("torch", fmt.Sprintf("torch %s is not in the compatibility catalog", r.Torch),
			fmt.Sprintf("The catalog knows torch %s; choose one of those. The catalog is built into imagectl: a new torch release comes with an imagectl release that adds its wheels (see docs/compat.md, Adding a release).", strings.Join(releases(), ", ")))
		return Wheel{}, false
	}
	variant, field := r.TorchVariant, "torch_variant"
	if variant == "" {
		variant, field = Variant(r.CUDA), "cuda"
	}
	w, ok := LookupWheel(r.Torch, variant)
	if !ok {
		add(field, fmt.Sprintf("torch %s publishes no %s wheel", r.Torch, variant),
			fmt.Sprintf("torch %s publishes %s wheels. %s", r.Torch, strings.Join(rel.Variants(), ", "), choices(rel, r.CUDA)))
		return Wheel{}, false
	}
	good := true
	switch {
	case w.CUDA == "" && r.CUDA != "":
		add(field, fmt.Sprintf("the cpu wheel of torch %s on a CUDA %s base leaves the GPU unused", r.Torch, r.CUDA),
			fmt.Sprintf("Drop cuda for a CPU-only image, or choose a CUDA wheel. %s", choices(rel, r.CUDA)))
		good = false
	case w.CUDA != "" && r.CUDA == "":
		add(field, fmt.Sprintf("torch_variant %s needs a CUDA base", variant),
			fmt.Sprintf("Set cuda to the base image's CUDA version (the %s wheels are built for CUDA %s), or use torch_variant = \"cpu\".", variant, w.CUDA))
		good = false
	case w.CUDA != "" && version.Major(w.CUDA) != version.Major(r.CUDA):
		add(field, fmt.Sprintf("the %s wheels (CUDA %s) on a CUDA %s base mix two CUDA major versions", variant, w.CUDA, r.CUDA),
			fmt.Sprintf("The %s wheels need a CUDA %s.x base and a driver for CUDA %s; two CUDA runtimes of different majors in one process crash at run time. %s", variant, version.Major(w.CUDA), w.CUDA, choices(rel, r.CUDA)))
		good = false
	}
	for _, p := range r.Platforms {
		if w.PublishesPlatform(p) {
			continue
		}
		detail := fmt.Sprintf("torch %s+%s publishes wheels for %s only (%s).", r.Torch, variant, strings.Join(w.Platforms, ", "), w.PlatformsSource)
		if vs := rel.VariantsFor(p); len(vs) > 0 {
			detail += fmt.Sprintf(" For %s, torch %s publishes %s wheels: choose one of those variants (with a matching cuda base), or drop %s from platforms.", p, r.Torch, strings.Join(vs, ", "), p)
		} else {
			detail += fmt.Sprintf(" torch %s publishes no wheel for %s: drop it from platforms.", r.Torch, p)
		}
		add("platforms", fmt.Sprintf("torch %s+%s publishes no %s wheel", r.Torch, variant, p), detail)
		good = false
	}
	if r.Python != "" && !w.supportsPython(r.Python) {
		add("python", fmt.Sprintf("torch %s+%s is not built for Python %s", r.Torch, variant, r.Python),
			fmt.Sprintf("torch %s+%s wheels are built for Python %s.", r.Torch, variant, strings.Join(w.Python, ", ")))
		good = false
	}
	if !checkPin("nccl", "NCCL", r.NCCL, w.NCCL, r.Torch, variant, add) {
		good = false
	}
	if !checkPin("cudnn", "cuDNN", r.CUDNN, w.CUDNN, r.Torch, variant, add) {
		good = false
	}
	return w, good
}

// checkPin checks the spec's field (nccl, cudnn; label names the library in
// messages), set to version set, against the pin of torch TORCH+VARIANT's
// wheel; an unset field is not checked.
func checkPin(field, label, set string, pin *Pin, torch, variant string, add func(field, summary, detail string)) bool {
	switch {
	case set == "":
		return true
	case pin == nil:
		add(field, fmt.Sprintf("torch %s+%s pins no %s, but %s = %q", torch, variant, label, field, set), fmt.Sprintf("Remove %s from a CPU-only image.", field))
		return false
	case set != pin.Version:
		add(field, fmt.Sprintf("%s %s differs from the %s %s that torch %s+%s pins", field, set, label, pin.Version, torch, variant),
			fmt.Sprintf("The wheel requires %s; pip cannot install %s %s beside it. Set %s = %q or remove the attribute.", pin, field, set, field, pin.Version))
		return false
	}
	return true
}

// choices names the honest options for a CUDA base whose request has no
// usable wheel: the variant built for the base's own CUDA (when there is
// one), else the nearest older variant (change the base), and every newer
// variant of the same CUDA major under minor-version compatibility.
func choices(rel TorchRelease, cuda string) string {
	if cuda == "" {
		return "Set cuda to the base image's CUDA version and choose a published variant."
	}
	var own, older *Wheel
	var newer []*Wheel
	for i := range rel.Wheels {
		w := &rel.Wheels[i]
		if w.CUDA == "" {
			continue
		}
		c, err := version.Compare(w.CUDA, cuda)
		if err != nil {
			continue
		}
		switch {
		case c == 0:
			own = w
		case c < 0 && (older == nil || version.Before(older.CUDA, w.CUDA)):
			older = w
		case c > 0 && version.Major(w.CUDA) == version.Major(cuda):
			newer = append(newer, w)
		}
	}
	var opts []string
	if own != nil {
		opts = append(opts, fmt.Sprintf("torch_variant = %q, the wheels built for this CUDA %s base", own.Variant, cuda))
	} else if older != nil {
		opts = append(opts, fmt.Sprintf("cuda = %q (a CUDA %s base) with the %s wheels", older.CUDA, older.CUDA, older.Variant))
	}
	if len(newer) > 0 {
		floor := "the minor-version floor"
		if f, ok := LookupDriverFloor(newer[0].CUDA); ok {
			floor = f.MinorCompat
		}
		var names []string
		for _, w := range newer {
			names = append(names, fmt.Sprintf("%q", w.Variant))
		}
		opts = append(opts, fmt.Sprintf("keep the CUDA %s base and set torch_variant = %s to run those wheels under CUDA minor-version compatibility, which needs driver_floor >= %s", cuda, strings.Join(names, " or "), floor))
	}
	switch len(opts) {
	case 0:
		return fmt.Sprintf("Choose a base whose CUDA matches one of them; CUDA %s has no compatible wheel.", cuda)
	case 1:
		return "The honest choice: " + opts[0] + ". imagectl does not pick it for you."
	}
	return fmt.Sprintf("Choose one explicitly: (1) %s, or (2) %s. imagectl does not pick for you.", opts[0], opts[1])
}
