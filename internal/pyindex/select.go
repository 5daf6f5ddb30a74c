package pyindex

import (
	"context"
	"fmt"
	"strings"

	"imagectl/internal/logs"
	"imagectl/internal/pep"
	"imagectl/internal/version"
)

// pureTags are the wheel tags any CPython 3 runs.
var pureTags = map[string]bool{"py3-none-any": true, "py2.py3-none-any": true}

// NewestPure picks the newest final release of project among files: a
// pure-Python wheel (py3-none-any), not yanked, with a sha256, at least
// version min, whose Requires-Python admits python ("3.11"). It is how the
// lock chooses the pip that resolves and installs. A candidate whose
// Requires-Python does not parse is left out with a warning on ctx's
// logger, naming the file and the specifier.
func NewestPure(ctx context.Context, files []File, project, python, minVersion string) (File, error) {
	var best File
	var bestV version.Numeric
	project = pep.Normalize(project)
	floor, err := version.Parse(minVersion)
	if err != nil {
		return File{}, fmt.Errorf("minimum version: %w", err)
	}
	for _, f := range files {
		w, ok := pep.ParseWheel(f.Filename)
		if !ok || w.Name != project || !pureTags[w.Tags] || f.Yanked || !pep.IsSHA256(f.SHA256) {
			continue
		}
		v, err := version.Parse(w.Version)
		if err != nil || v.Compare(floor) < 0 {
			continue
		}
		ok, err = SatisfiesPython(f.RequiresPython, python)
		if err != nil {
			logs.From(ctx).Warn("skipping a candidate whose Requires-Python does not parse", "file", f.Filename, "requires_python", f.RequiresPython, "err", err)
		}
		if err != nil || !ok {
			continue
		}
		if bestV == nil || v.Compare(bestV) > 0 {
			best, bestV = f, v
		}
	}
	if bestV == nil {
		return File{}, fmt.Errorf("no %s wheel (py3-none-any, with a sha256, not yanked, >= %s, for Python %s) among the %d files listed", project, minVersion, python, len(files))
	}
	return best, nil
}

// SatisfiesPython evaluates a Requires-Python specifier (PEP 440 clauses
// joined by commas: >=, >, <=, <, ==, !=, ~=, with ".*" for == and !=)
// for a Python version such as "3.11" or "3.11.2". An empty specifier
// admits every version.
func SatisfiesPython(spec, python string) (bool, error) {
	pv, err := version.Parse(strings.TrimSpace(python))
	if err != nil {
		return false, fmt.Errorf("python version: %w", err)
	}
	for _, clause := range strings.Split(spec, ",") {
		c := strings.TrimSpace(clause)
		if c == "" {
			continue
		}
		op := ""
		for _, o := range []string{"~=", "==", "!=", ">=", "<=", ">", "<"} {
			if strings.HasPrefix(c, o) {
				op = o
				break
			}
		}
		if op == "" {
			return false, fmt.Errorf("Requires-Python clause %q has no operator", c)
		}
		vs := strings.TrimSpace(c[len(op):])
		wild := strings.HasSuffix(vs, ".*")
		v, err := version.Parse(strings.TrimSuffix(vs, ".*"))
		if err != nil {
			return false, fmt.Errorf("Requires-Python clause %q: %q is not a release version", c, vs)
		}
		var hold bool
		switch op {
		case "==", "!=":
			eq := false
			if wild {
				eq = len(pv) >= len(v) && pv[:len(v)].Compare(v) == 0
			} else {
				eq = pv.Compare(v) == 0
			}
			hold = eq == (op == "==")
		case ">=":
			hold = pv.Compare(v) >= 0
		case ">":
			hold = pv.Compare(v) > 0
		case "<=":
			hold = pv.Compare(v) <= 0
		case "<":
			hold = pv.Compare(v) < 0
		case "~=":
			if len(v) < 2 {
				return false, fmt.Errorf("Requires-Python clause %q: ~= needs two release segments", c)
			}
			prefix := v[:len(v)-1]
			hold = pv.Compare(v) >= 0 && len(pv) >= len(prefix) && pv[:len(prefix)].Compare(prefix) == 0
		}
		if !hold {
			return false, nil
		}
	}
	return true, nil
}
