package lock

import (
	"fmt"
	"io"
	"sort"
)

// Changes is what moved between two locks: the monthly release notes.
type Changes struct {
	Added   []Package `json:"added"`
	Removed []Package `json:"removed"`
	Changed []Change  `json:"changed"`
}

// Package is one package on one side of a diff.
type Package struct {
	// Kind is "pip", "apt" or "base".
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Change is a package present on both sides with different versions (for
// the base: different manifest digests).
type Change struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Empty reports whether nothing moved.
func (c Changes) Empty() bool {
	return len(c.Added) == 0 && len(c.Removed) == 0 && len(c.Changed) == 0
}

// Diff compares two locks by package, sorted by kind then name.
func Diff(old, new *Lock) Changes {
	c := Changes{Added: []Package{}, Removed: []Package{}, Changed: []Change{}}
	side := func(l *Lock) map[[2]string]string {
		m := map[[2]string]string{}
		if l == nil {
			return m
		}
		if l.Base.Ref != "" {
			m[[2]string{"base", l.Base.Ref}] = l.Base.ManifestDigest
		}
		for _, d := range l.Apt {
			n := d.Name
			if d.Arch != "" && d.Arch != "all" && d.Arch != "amd64" {
				n += ":" + d.Arch
			}
			m[[2]string{"apt", n}] = d.Version
		}
		for _, w := range l.Pip {
			m[[2]string{"pip", w.Name}] = w.Version
		}
		return m
	}
	a, b := side(old), side(new)
	for k, v := range a {
		w, ok := b[k]
		switch {
		case !ok:
			c.Removed = append(c.Removed, Package{Kind: k[0], Name: k[1], Version: v})
		case w != v:
			c.Changed = append(c.Changed, Change{Kind: k[0], Name: k[1], From: v, To: w})
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			c.Added = append(c.Added, Package{Kind: k[0], Name: k[1], Version: v})
		}
	}
	less := func(k1, n1, k2, n2 string) bool {
		if k1 != k2 {
			return k1 < k2
		}
		return n1 < n2
	}
	sort.Slice(c.Added, func(i, j int) bool { return less(c.Added[i].Kind, c.Added[i].Name, c.Added[j].Kind, c.Added[j].Name) })
	sort.Slice(c.Removed, func(i, j int) bool {
		return less(c.Removed[i].Kind, c.Removed[i].Name, c.Removed[j].Kind, c.Removed[j].Name)
	})
	sort.Slice(c.Changed, func(i, j int) bool {
		return less(c.Changed[i].Kind, c.Changed[i].Name, c.Changed[j].Kind, c.Changed[j].Name)
	})
	return c
}

// WriteText writes c for people: one line per package, "no changes" when
// nothing moved.
func (c Changes) WriteText(w io.Writer) error {
	if c.Empty() {
		_, err := fmt.Fprintln(w, "no changes")
		return err
	}
	var err error
	p := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, a...)
		}
	}
	for _, ch := range c.Changed {
		p("~ %-4s %s %s -> %s\n", ch.Kind, ch.Name, ch.From, ch.To)
	}
	for _, a := range c.Added {
		p("+ %-4s %s %s\n", a.Kind, a.Name, a.Version)
	}
	for _, r := range c.Removed {
		p("- %-4s %s %s\n", r.Kind, r.Name, r.Version)
	}
	p("%d changed, %d added, %d removed\n", len(c.Changed), len(c.Added), len(c.Removed))
	return err
}
