package wheelhouse

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"imagectl/internal/atomicfile"
	"imagectl/internal/pep"
)

// JSONType is the PEP 691 media type of the JSON index pages.
const JSONType = "application/vnd.pypi.simple.v1+json"

// File is one distribution file in an index.
type File struct {
	// Project is the project name as its metadata spells it.
	Project string
	// Version is the version from its metadata.
	Version string
	// Filename is the wheel's file name, under files/.
	Filename string
	// SHA256 is the hex sha256 of the wheel.
	SHA256 string
	// Size is the wheel's size in bytes.
	Size int64
	// RequiresPython is its Requires-Python, if any.
	RequiresPython string
	// MetadataSHA256 is the hex sha256 of its METADATA (served as
	// files/FILENAME.metadata, PEP 658).
	MetadataSHA256 string
}

// Publish builds the wheel for s into the index at dir and regenerates the
// index, so the new file is served next to the ones already there.
func Publish(dir string, s Spec) (File, error) {
	path, err := WriteWheel(filepath.Join(dir, "files"), s)
	if err != nil {
		return File{}, err
	}
	files, err := WriteIndex(dir)
	if err != nil {
		return File{}, err
	}
	for _, f := range files {
		if f.Filename == filepath.Base(path) {
			return f, nil
		}
	}
	return File{}, fmt.Errorf("index %s: published %s but it is not in the index", dir, path)
}

// WriteIndex (re)generates dir/simple/ from the wheels in dir/files/: the
// PEP 503 HTML pages (index.html), the PEP 691 JSON pages (index.json) and
// the PEP 658 metadata files beside each wheel. Output is sorted and the
// same for the same wheels. It returns the files indexed.
func WriteIndex(dir string) ([]File, error) {
	wheels, err := filepath.Glob(filepath.Join(dir, "files", "*.whl"))
	if err != nil {
		return nil, err
	}
	writeMeta := func(w string, meta []byte) error { return atomicfile.Write(w+".metadata", meta, 0o644) }
	byProject, projects, all, err := groupWheels(wheels, writeMeta)
	if err != nil {
		return nil, err
	}

	simple := filepath.Join(dir, "simple")
	// Drop pages of projects that no longer have files.
	if old, err := os.ReadDir(simple); err == nil {
		for _, e := range old {
			if _, ok := byProject[e.Name()]; e.IsDir() && !ok {
				if err := os.RemoveAll(filepath.Join(simple, e.Name())); err != nil {
					return nil, err
				}
			}
		}
	}

	root := pep.Page{RepositoryVersion: "1.0", Title: "Simple index"}
	type jproject struct {
		Name string `json:"name"`
	}
	jroot := struct {
		Meta     map[string]string `json:"meta"`
		Projects []jproject        `json:"projects"`
	}{Meta: map[string]string{"api-version": "1.0"}, Projects: []jproject{}}
	for _, p := range projects {
		root.Links = append(root.Links, pep.Link{Href: p + "/", Text: p})
		jroot.Projects = append(jroot.Projects, jproject{Name: p})
		if err := writeProject(filepath.Join(simple, p), p, byProject[p]); err != nil {
			return nil, err
		}
	}
	if err := atomicfile.Write(filepath.Join(simple, "index.html"), root.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(simple, "index.json"), jroot); err != nil {
		return nil, err
	}
	return all, nil
}

// groupWheels inspects the wheels in name order and groups them by
// normalized project name; projects are sorted and all is every file in
// the wheels' order. each, when not nil, is called with every wheel's path
// and its METADATA.
func groupWheels(wheels []string, each func(path string, meta []byte) error) (byProject map[string][]File, projects []string, all []File, err error) {
	sort.Strings(wheels)
	byProject = map[string][]File{}
	for _, w := range wheels {
		f, meta, err := inspect(w)
		if err != nil {
			return nil, nil, nil, err
		}
		if each != nil {
			if err := each(w, meta); err != nil {
				return nil, nil, nil, err
			}
		}
		n := pep.Normalize(f.Project)
		byProject[n] = append(byProject[n], f)
		all = append(all, f)
	}
	projects = make([]string, 0, len(byProject))
	for p := range byProject {
		projects = append(projects, p)
	}
	sort.Strings(projects)
	return byProject, projects, all, nil
}

func writeProject(dir, name string, files []File) error {
	sort.Slice(files, func(i, j int) bool { return files[i].Filename < files[j].Filename })
	page := pep.Page{RepositoryVersion: "1.0", Title: "Links for " + name}
	type jfile struct {
		Filename       string            `json:"filename"`
		URL            string            `json:"url"`
		Hashes         map[string]string `json:"hashes"`
		RequiresPython string            `json:"requires-python,omitempty"`
	}
	j := struct {
		Meta  map[string]string `json:"meta"`
		Name  string            `json:"name"`
		Files []jfile           `json:"files"`
	}{Meta: map[string]string{"api-version": "1.0"}, Name: name, Files: []jfile{}}
	for _, f := range files {
		href := "../../files/" + f.Filename
		page.Links = append(page.Links, pep.Link{Href: href + "#sha256=" + f.SHA256, Text: f.Filename,
			RequiresPython: f.RequiresPython, CoreMetadata: "sha256=" + f.MetadataSHA256})
		// The JSON pages leave out PEP 658's metadata keys: Debian bookworm's
		// pip 23.0.1 crashes on their PEP 691 form ("unhashable type: 'dict'").
		j.Files = append(j.Files, jfile{
			Filename: f.Filename, URL: href, Hashes: map[string]string{"sha256": f.SHA256},
			RequiresPython: f.RequiresPython,
		})
	}
	if err := atomicfile.Write(filepath.Join(dir, "index.html"), page.Bytes(), 0o644); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "index.json"), j)
}

func writeJSON(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return atomicfile.Write(path, b.Bytes(), 0o644)
}

// inspect reads a wheel's METADATA and hashes the file.
func inspect(path string) (File, []byte, error) {
	f := File{Filename: filepath.Base(path)}
	fh, err := os.Open(path)
	if err != nil {
		return f, nil, err
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return f, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	f.SHA256, f.Size = hex.EncodeToString(h.Sum(nil)), n
	meta, err := pep.WheelMetadata(fh, n, f.Filename)
	if err != nil {
		return f, nil, fmt.Errorf("wheel %s: %w", path, err)
	}
	md, err := pep.ParseMetadata(meta)
	if err != nil {
		return f, nil, fmt.Errorf("wheel %s: %w", path, err)
	}
	f.Project, f.Version, f.RequiresPython = md.Name, md.Version, md.RequiresPython
	ms := sha256.Sum256(meta)
	f.MetadataSHA256 = hex.EncodeToString(ms[:])
	return f, meta, nil
}
