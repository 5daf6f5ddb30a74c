package resolve

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"pault.ag/go/debian/control"
	"pault.ag/go/debian/dependency"

	"imagectl/internal/lock"
	"imagectl/internal/pep"
	"imagectl/internal/shell"
	"imagectl/internal/spec"
)

// ForbiddenError reports a package the image's policy forbids, and what
// pulled it into the resolved closure.
type ForbiddenError struct {
	Image, Kind, Package, Version string
	// Chain is the dependency path from a package the spec asks for (an
	// apt entry, or python3.X / python3.X-venv when the lock provisions the
	// spec's Python) to the forbidden one ("openssh-server", "openssh-client", "libfoo"); just the
	// package when the spec asks for it itself; empty when it could not be
	// traced (TraceErr says why).
	Chain    []string
	TraceErr error
}

func (e *ForbiddenError) Error() string {
	msg := fmt.Sprintf("image %s: policy forbids %s package %s, and the resolved closure has %s %s", e.Image, e.Kind, e.Package, e.Package, e.Version)
	switch {
	case len(e.Chain) == 1:
		return msg + ": the spec asks for it"
	case len(e.Chain) > 1:
		return msg + ", pulled in by " + strings.Join(e.Chain, " -> ")
	case e.TraceErr != nil:
		return msg + fmt.Sprintf(" (what pulled it in could not be traced: %v)", e.TraceErr)
	}
	return msg
}

// checkForbidden fails on the first forbidden package of the closure and
// traces what pulled it in: for apt through the Depends of the closure (asked
// of apt in the base, only on this failure path), for pip through the
// Requires-Dist in pip's report.
func checkForbidden(ctx context.Context, r Runner, img spec.Image, image string, debs []lock.Deb, res *pipResult) error {
	for _, f := range img.Policy.ForbiddenPackages {
		for _, d := range debs {
			if d.Name != f {
				continue
			}
			e := &ForbiddenError{Image: img.Name, Kind: "apt", Package: f, Version: d.Version}
			// The spec's apt list, and the interpreter's packages when the
			// lock provisions Python from the base's repositories.
			asked := append(append([]string(nil), img.Apt...), pythonPackages(img.Python)...)
			e.Chain, e.TraceErr = aptChain(ctx, r, image, asked, debs, f)
			return e
		}
		if res == nil {
			continue
		}
		for _, w := range res.Wheels {
			if w.Name != pep.Normalize(f) {
				continue
			}
			e := &ForbiddenError{Image: img.Name, Kind: "pip", Package: w.Name, Version: w.Version}
			if e.Chain = pipChain(res, w.Name); e.Chain == nil {
				e.TraceErr = fmt.Errorf("no requested package leads to %s in pip's report", w.Name)
			}
			return e
		}
	}
	return nil
}

// pipChain is the shortest path from a requested project to target through
// the Requires-Dist of pip's report.
func pipChain(res *pipResult, target string) []string {
	var starts []string
	edges := map[string][]string{}
	for n, it := range res.items {
		if it.Requested {
			starts = append(starts, n)
		}
		for _, r := range it.Metadata.RequiresDist {
			spec, _, _ := strings.Cut(r, ";")
			if dep := reqName(spec); dep != "" {
				if _, ok := res.items[dep]; ok {
					edges[n] = append(edges[n], dep)
				}
			}
		}
	}
	sort.Strings(starts)
	for n := range edges {
		sort.Strings(edges[n])
	}
	return shortestPath(starts, edges, target)
}

// aptWhyScript prints apt's records of the closure's exact versions.
func aptWhyScript(debs []lock.Deb) string {
	var b strings.Builder
	b.WriteString("set -u\n{ apt-get update -qq && for p in")
	for _, d := range debs {
		b.WriteString(" " + shell.Quote(d.Name+"="+d.Version))
	}
	b.WriteString("; do apt-cache show --no-all-versions \"$p\" || exit 1; echo; done; } >/out/show.txt 2>/out/show.log\necho $? >/out/show.rc\n")
	return b.String()
}

// aptChain asks apt in the base for the Depends and Pre-Depends of the
// closure and returns the shortest path from a spec package to target.
func aptChain(ctx context.Context, r Runner, image string, asked []string, debs []lock.Deb, target string) ([]string, error) {
	files, err := r.Run(ctx, Job{Name: "apt why", Image: image, Script: aptWhyScript(debs)})
	if err != nil {
		return nil, err
	}
	if rc := strings.TrimSpace(string(files["show.rc"])); rc != "0" {
		return nil, fmt.Errorf("apt-cache show exited %s: %s", rc, strings.TrimSpace(string(files["show.log"])))
	}
	edges, err := aptEdges(files["show.txt"], debs)
	if err != nil {
		return nil, err
	}
	var starts []string
	for _, a := range asked {
		n, _, _ := strings.Cut(a, "=")
		n, _, _ = strings.Cut(n, ":")
		starts = append(starts, n)
	}
	if c := shortestPath(starts, edges, target); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no spec package depends on %s in apt's records", target)
}

// aptRecord is the part of an apt-cache show paragraph the chain needs.
type aptRecord struct {
	control.Paragraph
	Package    string
	Depends    dependency.Dependency
	PreDepends dependency.Dependency `control:"Pre-Depends"`
	Provides   dependency.Dependency
}

// aptEdges reads apt-cache show paragraphs into package -> dependencies in
// the closure (a virtual package leads to the closure package providing it;
// all alternatives of an "a | b" are followed: apt chose among those present).
func aptEdges(show []byte, debs []lock.Deb) (map[string][]string, error) {
	in := map[string]bool{}
	for _, d := range debs {
		in[d.Name] = true
	}
	var recs []aptRecord
	if err := control.Unmarshal(&recs, bytes.NewReader(show)); err != nil {
		return nil, fmt.Errorf("reading apt-cache show: %w", err)
	}
	providers := map[string][]string{}
	for _, r := range recs {
		for _, p := range names(r.Provides) {
			providers[p] = append(providers[p], r.Package)
		}
	}
	edges := map[string][]string{}
	for _, r := range recs {
		seen := map[string]bool{}
		for _, dep := range append(names(r.PreDepends), names(r.Depends)...) {
			targets := []string{dep}
			if !in[dep] {
				targets = providers[dep]
			}
			for _, t := range targets {
				if in[t] && !seen[t] && t != r.Package {
					seen[t] = true
					edges[r.Package] = append(edges[r.Package], t)
				}
			}
		}
	}
	return edges, nil
}

// names lists the package names of a relationship field, every
// alternative included: "a (>= 1) | b:any, c" -> a, b, c.
func names(d dependency.Dependency) []string {
	var out []string
	for _, r := range d.Relations {
		for _, p := range r.Possibilities {
			out = append(out, p.Name)
		}
	}
	return out
}

// shortestPath is a breadth-first search from starts (in order) to target.
func shortestPath(starts []string, edges map[string][]string, target string) []string {
	parent := map[string]string{}
	var queue []string
	for _, s := range starts {
		if _, ok := parent[s]; !ok {
			parent[s] = ""
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == target {
			var path []string
			for p := n; p != ""; p = parent[p] {
				path = append([]string{p}, path...)
			}
			return path
		}
		for _, m := range edges[n] {
			if _, ok := parent[m]; !ok {
				parent[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
}
