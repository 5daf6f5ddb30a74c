package pep

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"net/mail"
	"strings"
)

// Metadata is what imagectl reads of a distribution's core metadata (the
// METADATA file of a wheel's or an installed project's .dist-info).
type Metadata struct {
	// Name is the project name as written; Normalize it to compare.
	Name string
	// Version is the version as written.
	Version string
	// RequiresPython is the Requires-Python specifier, "" when none.
	RequiresPython string
	// LicenseExpression is the PEP 639 License-Expression with runs of
	// white space folded, "" when none.
	LicenseExpression string
}

// maxMetadata bounds a METADATA file read out of a wheel: the largest on
// PyPI (a long description inlined) are a few MB.
const maxMetadata = 16 << 20

// ParseMetadata reads core metadata: email-style headers (RFC 822, as
// Python's email.parser reads them), then an optional body (the long
// description), which it ignores. Name and Version are required.
func ParseMetadata(b []byte) (Metadata, error) {
	// Only the headers matter; the body may be anything.
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		b = b[:i+1]
	}
	m, err := mail.ReadMessage(bytes.NewReader(append(b[:len(b):len(b)], '\n')))
	if err != nil {
		return Metadata{}, fmt.Errorf("core metadata: %w", err)
	}
	md := Metadata{
		Name:              strings.TrimSpace(m.Header.Get("Name")),
		Version:           strings.TrimSpace(m.Header.Get("Version")),
		RequiresPython:    strings.TrimSpace(m.Header.Get("Requires-Python")),
		LicenseExpression: strings.Join(strings.Fields(m.Header.Get("License-Expression")), " "),
	}
	if md.Name == "" || md.Version == "" {
		return Metadata{}, fmt.Errorf("core metadata: Name and Version are required")
	}
	return md, nil
}

// WheelMetadata returns the METADATA file of the wheel read through r (size
// bytes, named filename): the one in the top-level .dist-info directory
// that the file name names (PEP 427), else the only top-level one. Over a
// ranged reader it reads the zip directory and that one member, nothing else.
func WheelMetadata(r io.ReaderAt, size int64, filename string) ([]byte, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("reading wheel %s: %w", filename, err)
	}
	want := ""
	if w, ok := ParseWheel(filename); ok {
		want = strings.ToLower(w.Dist + "-" + w.Version + ".dist-info/METADATA")
	}
	var found *zip.File
	for _, zf := range zr.File {
		dir, base, ok := strings.Cut(zf.Name, "/")
		if !ok || base != "METADATA" || !strings.HasSuffix(dir, ".dist-info") {
			continue
		}
		if strings.ToLower(zf.Name) == want || found == nil {
			found = zf
		}
	}
	if found == nil {
		return nil, fmt.Errorf("wheel %s has no .dist-info/METADATA", filename)
	}
	rc, err := found.Open()
	if err != nil {
		return nil, fmt.Errorf("reading %s from %s: %w", found.Name, filename, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxMetadata+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s from %s: %w", found.Name, filename, err)
	}
	if len(b) > maxMetadata {
		return nil, fmt.Errorf("reading %s from %s: larger than %d MiB", found.Name, filename, maxMetadata>>20)
	}
	return b, nil
}
