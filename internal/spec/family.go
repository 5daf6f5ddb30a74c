package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"imagectl/internal/compat"
	"imagectl/internal/pep"
	"imagectl/internal/version"
)

// applyFamily pins the torch family in img.Pip: an entry naming a domain
// library of the image's torch (torchvision, torchaudio) without a version
// gets the one released with that torch, an entry whose specifier admits
// that version is narrowed to it, and any other entry is an error at the
// pip attribute naming the version that matches. A torchvision built for
// another torch fails at import or at its first CUDA op
// (pytorch/vision#4222), so no other version is let through to the lock.
func (l *loader) applyFamily(img *Image, ranges map[string]hcl.Range) bool {
	if img.Torch == "" {
		return true
	}
	rel, ok := compat.Release(img.Torch)
	if !ok {
		return true // reported by applyCompat
	}
	good := true
	img.Pip = slices.Clone(img.Pip) // the matrix's images may share the defaults' slice
	for i, s := range img.Pip {
		r, err := pep.ParseRequirement(s)
		if err != nil {
			continue // reported by the pip attribute's check
		}
		want, ok := rel.FamilyVersion(r.Name)
		if !ok {
			continue
		}
		name := pep.Normalize(r.Name)
		rng := elemRange(ranges, "pip", i)
		fix := fmt.Sprintf("Write %q (imagectl fills in %s) or %q.", name, want, name+"=="+want)
		switch admits, why := specifierAdmits(r.Specifier, want); {
		case r.URL != "":
			l.errorf(rng, "torch family from a URL", "pip entry %q takes %s from a URL; it comes from the variant's PyTorch index, in the version released with torch %s (%s, image %q). %s", s, name, img.Torch, want, img.Name, fix)
			good = false
		case !admits:
			l.errorf(rng, fmt.Sprintf("%s does not match torch %s", name, img.Torch),
				"pip entry %q %s; torch %s is released with %s %s, and a %s built for another torch fails at import or at its first CUDA op (pytorch/vision#4222). Source: %s. %s (image %q)",
				s, why, img.Torch, name, want, name, rel.FamilySource, fix, img.Name)
			good = false
		default:
			img.Pip[i] = pinned(s, r, want)
		}
	}
	return good
}

var extrasRE = regexp.MustCompile(`\[[^\]]*\]`)

// pinned rewrites the requirement s (parsed as r) to ==want, keeping its
// extras and environment marker.
func pinned(s string, r pep.Requirement, want string) string {
	out := r.Name + extrasRE.FindString(s) + "==" + want
	if _, marker, ok := strings.Cut(s, ";"); ok {
		out += "; " + strings.TrimSpace(marker)
	}
	return out
}

// specifierAdmits reports whether the PEP 440 specifier spec (no spaces,
// as pep.Requirement holds it; "" admits all) admits the release v. It
// evaluates release-number clauses (==, !=, <, <=, >, >=, ~=, and ==X.*);
// a clause it cannot evaluate (pre-releases, local labels, ===) does not
// admit v: the family must be pinned plainly. why says which clause failed.
func specifierAdmits(spec, v string) (ok bool, why string) {
	if spec == "" {
		return true, ""
	}
	for _, c := range strings.Split(strings.Trim(spec, "()"), ",") {
		op := strings.TrimRight(c[:min(len(c), 3)], "0123456789v.*")
		want := strings.TrimPrefix(strings.TrimPrefix(c, op), "v")
		if prefix, star := strings.CutSuffix(want, ".*"); star && (op == "==" || op == "!=") {
			match := version.HasPrefix(v, prefix)
			if match != (op == "==") {
				return false, "asks " + c
			}
			continue
		}
		cmp, err := version.Compare(v, want)
		if err != nil {
			return false, "asks " + c + ", which is not a plain release version"
		}
		var in bool
		switch op {
		case "==":
			in = cmp == 0
		case "!=":
			in = cmp != 0
		case "<":
			in = cmp < 0
		case "<=":
			in = cmp <= 0
		case ">":
			in = cmp > 0
		case ">=":
			in = cmp >= 0
		case "~=":
			in = cmp >= 0 && version.HasPrefix(v, compatiblePrefix(want))
		default:
			return false, "asks " + c + ", which imagectl does not evaluate"
		}
		if !in {
			return false, "asks " + c
		}
	}
	return true, ""
}

// compatiblePrefix is the release prefix ~=V requires: V without its last
// component ("0.21.1" -> "0.21").
func compatiblePrefix(v string) string {
	if i := strings.LastIndex(v, "."); i > 0 {
		return v[:i]
	}
	return v
}
