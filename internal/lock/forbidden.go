package lock

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"imagectl/internal/spec"
)

// ForbiddenError reports a package the image's policy forbids, and what
// pulled it into the resolved closure.
type ForbiddenError struct {
	Image, Kind, Package, Version string
	// Chain is the dependency path from a package the spec asks for to the
	// forbidden one ("openssh-server", "openssh-client", "libfoo"); just the
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
func checkForbidden(ctx context.Context, r Runner, img spec.Image, image string, debs []Deb, res *pipResult) error {
	for _, f := range img.Policy.ForbiddenPackages {
		for _, d := range debs {
			if d.Name != f {
				continue
			}
			e := &ForbiddenError{Image: img.Name, Kind: "apt", Package: f, Version: d.Version}
			e.Chain, e.TraceErr = aptChain(ctx, r, image, img.Apt, debs, f)
			return e
		}
		if res == nil {
			continue
		}
		for _, w := range res.Wheels {
			if w.Name != normalize(f) {
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
func aptWhyScript(debs []Deb) string {
	var b strings.Builder
	b.WriteString("set -u\n{ apt-get update -qq && for p in")
	for _, d := range debs {
		b.WriteString(" " + shellQuote(d.Name+"="+d.Version))
	}
	b.WriteString("; do apt-cache show --no-all-versions \"$p\" || exit 1; echo; done; } >/out/show.txt 2>/out/show.log\necho $? >/out/show.rc\n")
	return b.String()
}

// aptChain asks apt in the base for the Depends and Pre-Depends of the
// closure and returns the shortest path from a spec package to target.
func aptChain(ctx context.Context, r Runner, image string, asked []string, debs []Deb, target string) ([]string, error) {
	files, err := r.Run(ctx, Job{Name: "apt why", Image: image, Script: aptWhyScript(debs)})
	if err != nil {
		return nil, err
	}
	if rc := strings.TrimSpace(string(files["show.rc"])); rc != "0" {
		return nil, fmt.Errorf("apt-cache show exited %s: %s", rc, strings.TrimSpace(string(files["show.log"])))
	}
	edges := aptEdges(files["show.txt"], debs)
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

// aptEdges reads apt-cache show stanzas into package -> dependencies in the
// closure (a virtual package leads to the closure package providing it; all
// alternatives of an "a | b" are followed, apt chose one of those present).
func aptEdges(show []byte, debs []Deb) map[string][]string {
	in := map[string]bool{}
	for _, d := range debs {
		in[d.Name] = true
	}
	type stanza struct{ pkg, deps, provides string }
	var stanzas []stanza
	var cur stanza
	var last *string
	sc := bufio.NewScanner(bytes.NewReader(show))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	flush := func() {
		if cur.pkg != "" {
			stanzas = append(stanzas, cur)
		}
		cur, last = stanza{}, nil
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && last != nil {
			*last += " " + strings.TrimSpace(line)
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		last = nil
		switch k {
		case "Package":
			cur.pkg = v
		case "Depends", "Pre-Depends":
			if cur.deps != "" {
				cur.deps += ", "
			}
			cur.deps += v
			last = &cur.deps
		case "Provides":
			cur.provides = v
			last = &cur.provides
		}
	}
	flush()
	providers := map[string][]string{}
	for _, s := range stanzas {
		for _, p := range debNames(s.provides) {
			providers[p] = append(providers[p], s.pkg)
		}
	}
	edges := map[string][]string{}
	for _, s := range stanzas {
		seen := map[string]bool{}
		for _, dep := range debNames(s.deps) {
			targets := []string{dep}
			if !in[dep] {
				targets = providers[dep]
			}
			for _, t := range targets {
				if in[t] && !seen[t] && t != s.pkg {
					seen[t] = true
					edges[s.pkg] = append(edges[s.pkg], t)
				}
			}
		}
	}
	return edges
}

// debNames lists the package names of a Depends/Provides field:
// "a (>= 1) | b:any, c" -> a, b, c.
func debNames(field string) []string {
	var out []string
	for _, group := range strings.Split(field, ",") {
		for _, alt := range strings.Split(group, "|") {
			n := strings.TrimSpace(alt)
			if i := strings.IndexAny(n, " (["); i >= 0 {
				n = n[:i]
			}
			n, _, _ = strings.Cut(n, ":")
			if n != "" {
				out = append(out, n)
			}
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

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
