// Package releasefile is the release file, images/<image>/releases.json:
// which staging digest carries which release tags. Promotion reconciles the
// registry to it and records into it (under the file's lock, Update); the
// re-scan, the catalog and pin read it. It is its own package so that
// none of them imports another's stage for its format.
package releasefile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/atomicfile"
	"imagectl/internal/strictjson"
)

// SchemaVersion is the release file version this package reads and writes.
const SchemaVersion = 1

// FileName is the release file's name inside images/<image>/.
const FileName = "releases.json"

// File is a release file: images/<image>/releases.json.
type File struct {
	SchemaVersion int `json:"schema_version"`
	// Image is the image name (the lock's name).
	Image string `json:"image"`
	// Repository is the release repository, registry/path, no tag.
	Repository string `json:"repository"`
	// Releases are the promoted digests, oldest first. Releases stay: a new
	// month adds an entry.
	Releases []Release `json:"releases"`
	// Moving maps moving tags ("2.6-cu121") to the digest ("sha256:...") of
	// one of Releases.
	Moving map[string]string `json:"moving,omitempty"`
}

// Release is one promoted digest.
type Release struct {
	// Source is the image in the staging repository, by digest:
	// registry/path@sha256:... A tag here is refused by the digest gate.
	Source string `json:"source"`
	// Tags are the release's immutable tags, e.g. "2.6-cu121-2026.12".
	Tags []string `json:"tags"`
	// Month is the release month, YYYY-MM.
	Month string `json:"month"`
	// LockDigest is the digest of the lock the image was built from.
	LockDigest string `json:"lock_digest,omitempty"`
	// SupportEnd is the last day the release is patched, YYYY-MM-DD (the
	// spec's policy support_months from Month); empty: no support window.
	// The same date is in the release's signed support attestation.
	SupportEnd string `json:"support_end,omitempty"`
}

// Digest returns the release's source as a digest reference, or an error
// when Source is not one.
func (r Release) Digest() (name.Digest, error) {
	return name.NewDigest(r.Source, name.StrictValidation)
}

// FormatError reports a release file that cannot be read.
type FormatError struct {
	Path string
	Err  error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: not a valid release file: %v", e.Path, e.Err)
}
func (e *FormatError) Unwrap() error { return e.Err }

var (
	monthRE  = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)
	dateRE   = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`)
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Parse reads a release file strictly: unknown fields, trailing data,
// another schema version, malformed tags or months, a tag used twice, or a
// moving tag pointing outside Releases are errors. path is for messages.
func Parse(path string, b []byte) (*File, error) {
	var f File
	if err := strictjson.Decode(b, &f, "release object"); err != nil {
		return nil, &FormatError{Path: path, Err: err}
	}
	if err := f.Validate(); err != nil {
		return nil, &FormatError{Path: path, Err: err}
	}
	return &f, nil
}

// Validate reports what makes f an invalid release file (Parse's checks).
func (f *File) Validate() error {
	if f.SchemaVersion != SchemaVersion {
		return fmt.Errorf("schema_version %d is not supported (this imagectl reads version %d)", f.SchemaVersion, SchemaVersion)
	}
	if f.Image == "" {
		return errors.New("image is empty")
	}
	repo, err := name.NewRepository(f.Repository, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("repository %q: %w", f.Repository, err)
	}
	used := map[string]string{}
	digests := map[string]bool{}
	for i, r := range f.Releases {
		where := fmt.Sprintf("releases[%d]", i)
		if _, err := name.ParseReference(r.Source, name.StrictValidation); err != nil {
			return fmt.Errorf("%s: source %q: %w", where, r.Source, err)
		}
		if !monthRE.MatchString(r.Month) {
			return fmt.Errorf("%s: month %q: want YYYY-MM", where, r.Month)
		}
		if r.SupportEnd != "" && !dateRE.MatchString(r.SupportEnd) {
			return fmt.Errorf("%s: support_end %q: want YYYY-MM-DD", where, r.SupportEnd)
		}
		if r.LockDigest != "" && !digestRE.MatchString(r.LockDigest) {
			return fmt.Errorf("%s: lock_digest %q: want sha256:<64 hex>", where, r.LockDigest)
		}
		if len(r.Tags) == 0 {
			return fmt.Errorf("%s: no tags", where)
		}
		for _, t := range r.Tags {
			if err := checkTag(repo, t); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			if prev, ok := used[t]; ok {
				return fmt.Errorf("%s: tag %q is already used by %s", where, t, prev)
			}
			used[t] = where
		}
		if d, err := r.Digest(); err == nil {
			if digests[d.DigestStr()] {
				return fmt.Errorf("%s: digest %s is listed twice", where, d.DigestStr())
			}
			digests[d.DigestStr()] = true
		}
	}
	for t, d := range f.Moving {
		if err := checkTag(repo, t); err != nil {
			return fmt.Errorf("moving: %w", err)
		}
		if prev, ok := used[t]; ok {
			return fmt.Errorf("moving: tag %q is already a release tag of %s", t, prev)
		}
		if !digests[d] {
			return fmt.Errorf("moving: tag %q points to %s, which is not the digest of any release", t, d)
		}
	}
	return nil
}

func checkTag(repo name.Repository, t string) error {
	if _, err := name.NewTag(repo.Name()+":"+t, name.StrictValidation); err != nil {
		return fmt.Errorf("tag %q: %w", t, err)
	}
	if len(t) > 7 && (t[:7] == "sha256-") {
		return fmt.Errorf("tag %q: sha256-* tags are reserved for signatures and attestations", t)
	}
	return nil
}

// ReadFile reads and parses the release file at path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading release file: %w", err)
	}
	return Parse(path, b)
}

// Marshal returns the canonical file content: indented JSON, releases in
// file order, map keys sorted, a trailing newline.
func Marshal(f *File) ([]byte, error) {
	if f.SchemaVersion == 0 {
		f.SchemaVersion = SchemaVersion
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteFile writes f to path atomically.
func WriteFile(path string, f *File) error {
	b, err := Marshal(f)
	if err != nil {
		return fmt.Errorf("writing release file %s: %w", path, err)
	}
	return atomicfile.Write(path, b, 0o644)
}

// Record adds a release to the release file at path, creating the file
// (with image and repository) when it does not exist, and points the given
// moving tags at it (File.Add), under the file's lock (Update). Recording
// the same release again changes nothing; a release tag already used by
// another digest is an error.
func Record(path, image, repository string, rel Release, moving ...string) error {
	return Update(context.Background(), path, func(f *File) (*File, error) {
		switch {
		case f == nil:
			f = &File{SchemaVersion: SchemaVersion, Image: image, Repository: repository}
		case f.Image != image || f.Repository != repository:
			return nil, fmt.Errorf("recording release: %s is for %s in %s, not %s in %s", path, f.Image, f.Repository, image, repository)
		}
		if err := f.Add(rel, moving...); err != nil {
			return nil, err
		}
		return f, nil
	})
}

// Add adds rel to f, or, when f already has rel's digest, adds rel's tags
// to that release; and points the given moving tags at it. It changes f
// only when the result is a valid release file (a release tag already used
// by another digest is an error).
func (f *File) Add(rel Release, moving ...string) error {
	d, err := rel.Digest()
	if err != nil {
		return fmt.Errorf("recording release: source must be a digest reference: %w", err)
	}
	n := f.clone()
	rel.Tags = append([]string(nil), rel.Tags...)
	sort.Strings(rel.Tags)
	found := false
	for i, r := range n.Releases {
		rd, err := r.Digest()
		if err != nil || rd.DigestStr() != d.DigestStr() {
			continue
		}
		found = true
		if n.Releases[i].SupportEnd == "" {
			n.Releases[i].SupportEnd = rel.SupportEnd
		}
		for _, t := range rel.Tags {
			if !contains(r.Tags, t) {
				n.Releases[i].Tags = append(n.Releases[i].Tags, t)
			}
		}
		sort.Strings(n.Releases[i].Tags)
	}
	if !found {
		n.Releases = append(n.Releases, rel)
	}
	for _, t := range moving {
		if n.Moving == nil {
			n.Moving = map[string]string{}
		}
		n.Moving[t] = d.DigestStr()
	}
	if n.SchemaVersion == 0 {
		n.SchemaVersion = SchemaVersion
	}
	if err := n.Validate(); err != nil {
		return fmt.Errorf("recording release %s: %w", rel.Source, err)
	}
	*f = *n
	return nil
}

// clone is a deep copy of f.
func (f *File) clone() *File {
	n := *f
	n.Releases = make([]Release, len(f.Releases))
	for i, r := range f.Releases {
		r.Tags = append([]string(nil), r.Tags...)
		n.Releases[i] = r
	}
	n.Moving = nil
	for k, v := range f.Moving {
		if n.Moving == nil {
			n.Moving = map[string]string{}
		}
		n.Moving[k] = v
	}
	return &n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
