package wheelhouse

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"imagectl/internal/atomicfile"
	"imagectl/internal/pep"
)

// WritePlainIndex (re)generates a PEP 503 index in the shape of a directory
// behind a plain web server (a bucket mirror, download.pytorch.org/whl/cu124):
// the wheels lie flat in dir, each project page is dir/PROJECT/index.html
// linking "../FILE#sha256=HEX", and there is nothing else: no JSON pages
// (PEP 691), no metadata files or attributes (PEP 658), no
// data-requires-python. It returns the files indexed.
func WritePlainIndex(dir string) ([]File, error) {
	wheels, err := filepath.Glob(filepath.Join(dir, "*.whl"))
	if err != nil {
		return nil, err
	}
	byProject, projects, all, err := groupWheels(wheels, nil)
	if err != nil {
		return nil, err
	}
	var root pep.Page
	for _, p := range projects {
		root.Links = append(root.Links, pep.Link{Href: p + "/", Text: p})
		page := pep.Page{Title: "Links for " + p}
		for _, f := range byProject[p] {
			href := "../" + strings.ReplaceAll(url.PathEscape(f.Filename), "+", "%2B") + "#sha256=" + f.SHA256
			page.Links = append(page.Links, pep.Link{Href: href, Text: f.Filename})
		}
		if err := atomicfile.Write(filepath.Join(dir, p, "index.html"), page.Bytes(), 0o644); err != nil {
			return nil, err
		}
	}
	if err := atomicfile.Write(filepath.Join(dir, "index.html"), root.Bytes(), 0o644); err != nil {
		return nil, err
	}
	// Drop pages of projects that no longer have files.
	if old, err := os.ReadDir(dir); err == nil {
		for _, e := range old {
			if _, ok := byProject[e.Name()]; e.IsDir() && !ok {
				if _, err := os.Stat(filepath.Join(dir, e.Name(), "index.html")); err == nil {
					if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return all, nil
}
