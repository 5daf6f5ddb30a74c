package discover

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Package is one package an SBOM lists.
type Package struct {
	// Type is the package URL's type: deb, pypi, golang, ...
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (p Package) key() string { return p.Type + ":" + p.Name }

// spdxPackages reads the packages of a signed SPDX predicate, leaving out
// the image itself and its base (purpose CONTAINER), sorted by type and name.
func spdxPackages(b []byte) ([]Package, error) {
	var doc struct {
		Packages []struct {
			Name         string `json:"name"`
			Version      string `json:"versionInfo"`
			Purpose      string `json:"primaryPackagePurpose"`
			ExternalRefs []struct {
				Type    string `json:"referenceType"`
				Locator string `json:"referenceLocator"`
			} `json:"externalRefs"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("reading the SPDX SBOM: %w", err)
	}
	var out []Package
	for _, p := range doc.Packages {
		if p.Purpose == "CONTAINER" {
			continue
		}
		typ := ""
		for _, r := range p.ExternalRefs {
			if r.Type == "purl" && strings.HasPrefix(r.Locator, "pkg:") {
				typ, _, _ = strings.Cut(strings.TrimPrefix(r.Locator, "pkg:"), "/")
			}
		}
		out = append(out, Package{Type: typ, Name: p.Name, Version: p.Version})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// PackageChange is a package whose version differs between two releases.
type PackageChange struct {
	Type string `json:"type"`
	Name string `json:"name"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// diffPackages returns what new adds, removes and changes relative to old.
func diffPackages(old, new []Package) (added, removed []Package, changed []PackageChange) {
	o := map[string]Package{}
	for _, p := range old {
		o[p.key()] = p
	}
	n := map[string]Package{}
	for _, p := range new {
		n[p.key()] = p
		if op, ok := o[p.key()]; !ok {
			added = append(added, p)
		} else if op.Version != p.Version {
			changed = append(changed, PackageChange{Type: p.Type, Name: p.Name, Old: op.Version, New: p.Version})
		}
	}
	for _, p := range old {
		if _, ok := n[p.key()]; !ok {
			removed = append(removed, p)
		}
	}
	return added, removed, changed
}
