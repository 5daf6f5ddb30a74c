// Package wheelhouse makes small, valid, deterministic Python wheels and the
// static package index (PEP 503 HTML, PEP 691 JSON, PEP 658 metadata) that
// serves them, so the demo and the tests have a wheel index of their own on
// loopback.
//
// An index directory holds files/*.whl (with a files/*.whl.metadata beside
// each) and simple/, generated from the wheels present by WriteIndex.
package wheelhouse

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"imagectl/internal/pep"
)

// Spec describes one wheel.
type Spec struct {
	// Name is the project name, e.g. "demo-core".
	Name string `json:"name"`
	// Version is a PEP 440 version, e.g. "1.0.0".
	Version string `json:"version"`
	// Requires are Requires-Dist lines, e.g. "demo-dep>=1".
	Requires []string `json:"requires,omitempty"`
	// RequiresPython is the Requires-Python specifier. The default is ">=3.8".
	RequiresPython string `json:"requiresPython,omitempty"`
	// PayloadBytes is the size of a data file of incompressible pseudo-random
	// bytes in the package, derived from Name and Version only.
	PayloadBytes int64 `json:"payloadBytes,omitempty"`
	// Files are further files of the wheel by path ("torch/cuda/__init__.py");
	// one named MODULE/__init__.py replaces the generated one.
	Files map[string]string `json:"files,omitempty"`
}

// Tag is the only wheel tag this package makes.
const Tag = "py3-none-any"

// zipTime is every entry's timestamp: the earliest a zip can say.
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	versionRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*([a-z0-9.+!-]*)$`)
)

// module is the importable package (and dist-info prefix) for a project name.
func module(name string) string {
	return strings.ReplaceAll(pep.Normalize(name), "-", "_")
}

func (s Spec) validate() error {
	if !nameRE.MatchString(s.Name) {
		return fmt.Errorf("wheel spec: invalid name %q", s.Name)
	}
	if !versionRE.MatchString(s.Version) {
		return fmt.Errorf("wheel spec %s: invalid version %q", s.Name, s.Version)
	}
	if s.PayloadBytes < 0 {
		return fmt.Errorf("wheel spec %s: negative payloadBytes %d", s.Name, s.PayloadBytes)
	}
	for p := range s.Files {
		if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "..") || strings.Contains(p, ".dist-info/") {
			return fmt.Errorf("wheel spec %s: invalid file path %q", s.Name, p)
		}
	}
	for _, r := range s.Requires {
		if strings.ContainsAny(r, "\n\r") || strings.TrimSpace(r) == "" {
			return fmt.Errorf("wheel spec %s: invalid requirement %q", s.Name, r)
		}
	}
	return nil
}

// Filename is the wheel's file name, e.g. demo_core-1.0.0-py3-none-any.whl.
func (s Spec) Filename() string {
	return fmt.Sprintf("%s-%s-%s.whl", module(s.Name), s.Version, Tag)
}

func (s Spec) distInfo() string { return fmt.Sprintf("%s-%s.dist-info", module(s.Name), s.Version) }

// Metadata returns the wheel's METADATA file (core metadata 2.1).
func (s Spec) Metadata() []byte {
	rp := s.RequiresPython
	if rp == "" {
		rp = ">=3.8"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", s.Name, s.Version)
	fmt.Fprintf(&b, "Summary: imagectl test wheel %s\n", s.Name)
	fmt.Fprintf(&b, "Requires-Python: %s\n", rp)
	for _, r := range s.Requires {
		fmt.Fprintf(&b, "Requires-Dist: %s\n", r)
	}
	return b.Bytes()
}

// Build writes the wheel to w. The same Spec always gives the same bytes.
func Build(w io.Writer, s Spec) error {
	if err := s.validate(); err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	var record bytes.Buffer
	add := func(name string, method uint16, write func(io.Writer) error) error {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: zipTime})
		if err != nil {
			return fmt.Errorf("wheel %s: %s: %w", s.Filename(), name, err)
		}
		h := sha256.New()
		cw := &countWriter{}
		if err := write(io.MultiWriter(fw, h, cw)); err != nil {
			return fmt.Errorf("wheel %s: %s: %w", s.Filename(), name, err)
		}
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, recordHash(h), cw.n)
		return nil
	}
	bytesOf := func(b []byte) func(io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write(b); return err }
	}
	mod := module(s.Name)
	init := fmt.Sprintf("__version__ = %q\n", s.Version)
	if s.PayloadBytes > 0 {
		init += "import os\nPAYLOAD = os.path.join(os.path.dirname(__file__), \"payload.bin\")\n"
	}
	if v, ok := s.Files[mod+"/__init__.py"]; ok {
		init = v
	}
	if err := add(mod+"/__init__.py", zip.Deflate, bytesOf([]byte(init))); err != nil {
		return err
	}
	extra := make([]string, 0, len(s.Files))
	for p := range s.Files {
		if p != mod+"/__init__.py" {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	for _, p := range extra {
		if err := add(p, zip.Deflate, bytesOf([]byte(s.Files[p]))); err != nil {
			return err
		}
	}
	if s.PayloadBytes > 0 {
		if err := add(mod+"/payload.bin", zip.Store, func(w io.Writer) error {
			return writePayload(w, s)
		}); err != nil {
			return err
		}
	}
	di := s.distInfo()
	if err := add(di+"/METADATA", zip.Deflate, bytesOf(s.Metadata())); err != nil {
		return err
	}
	wheel := "Wheel-Version: 1.0\nGenerator: imagectl-wheelhouse\nRoot-Is-Purelib: true\nTag: " + Tag + "\n"
	if err := add(di+"/WHEEL", zip.Deflate, bytesOf([]byte(wheel))); err != nil {
		return err
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", di)
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: di + "/RECORD", Method: zip.Deflate, Modified: zipTime})
	if err != nil {
		return fmt.Errorf("wheel %s: RECORD: %w", s.Filename(), err)
	}
	if _, err := fw.Write(record.Bytes()); err != nil {
		return fmt.Errorf("wheel %s: RECORD: %w", s.Filename(), err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("wheel %s: %w", s.Filename(), err)
	}
	return nil
}

// writePayload writes s.PayloadBytes pseudo-random bytes seeded by the name
// and version, so the data does not compress and is the same on every run.
func writePayload(w io.Writer, s Spec) error {
	seed := sha256.Sum256([]byte(pep.Normalize(s.Name) + "==" + s.Version))
	rng := rand.NewChaCha8(seed)
	buf := make([]byte, 1<<20)
	for left := s.PayloadBytes; left > 0; {
		n := min(int64(len(buf)), left)
		_, _ = rng.Read(buf[:n]) // never fails
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		left -= n
	}
	return nil
}

func recordHash(h hash.Hash) string {
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// WriteWheel builds the wheel into dir (temp file + rename) and returns its path.
func WriteWheel(dir string, s Spec) (string, error) {
	if err := s.validate(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	path := filepath.Join(dir, s.Filename())
	f, err := os.CreateTemp(dir, "."+s.Filename()+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := Build(f, s); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
