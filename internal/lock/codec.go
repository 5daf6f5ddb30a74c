package lock

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"imagectl/internal/atomicfile"
	"imagectl/internal/exitcode"
	"imagectl/internal/strictjson"
)

// TamperedError reports a lock whose content does not match its digest.
type TamperedError struct {
	Path string
	Want string // the digest recorded in the file
	Got  string // the digest of the content
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("%s: lock content does not match its digest (recorded %s, content %s): it was edited by hand; run imagectl lock to regenerate it", e.Path, e.Want, e.Got)
}

// ExitCode implements exitcode.Coder.
func (e *TamperedError) ExitCode() int { return exitcode.LockTampered }

// FormatError reports a lock file that cannot be read as a lock.
type FormatError struct {
	Path string
	Err  error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: not a valid lock file: %v", e.Path, e.Err)
}
func (e *FormatError) Unwrap() error { return e.Err }

// Normalize sorts every list so that Marshal is byte-stable.
func (l *Lock) Normalize() {
	sortDebs(l.Apt)
	sortWheels(l.Pip)
	sort.Slice(l.Platforms, func(i, j int) bool { return l.Platforms[i].Platform < l.Platforms[j].Platform })
	for i := range l.Platforms {
		r := &l.Platforms[i]
		sortDebs(r.Apt)
		sortWheels(r.Pip)
		if r.Apt == nil {
			r.Apt = []Deb{}
		}
		if r.Pip == nil {
			r.Pip = []Wheel{}
		}
	}
	sort.Strings(l.Frozen)
	// A string sort (sm_100 before sm_75): a canonical order, not a
	// display one. Sorting numerically would change the bytes and digest
	// of every lock already written and signed; readers that show archs
	// order them with compat.CompareArchs.
	sort.Strings(l.Core.Archs)
	sort.Strings(l.Policy.ForbiddenPackages)
	// The vulnerability gate is read from the spec at promotion, not locked.
	l.Policy.Vulnerabilities = nil
	l.Policy.SupportMonths = 0 // read at promotion too
	if l.Apt == nil {
		l.Apt = []Deb{}
	}
	if l.Pip == nil {
		l.Pip = []Wheel{}
	}
}

func sortDebs(ds []Deb) {
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].Name != ds[j].Name {
			return ds[i].Name < ds[j].Name
		}
		return ds[i].Arch < ds[j].Arch
	})
}

func sortWheels(ws []Wheel) { sort.Slice(ws, func(i, j int) bool { return ws[i].Name < ws[j].Name }) }

// ContentDigest returns "sha256:<hex>" of the canonical encoding of l with
// its Digest field empty.
func (l Lock) ContentDigest() (string, error) {
	l.Digest = ""
	b, err := encode(&l)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Marshal normalizes l, sets its Digest and returns the canonical file
// content: indented JSON with a trailing newline.
func Marshal(l *Lock) ([]byte, error) {
	if err := l.Seal(); err != nil {
		return nil, err
	}
	return encode(l)
}

// Seal normalizes l and sets its schema version (when unset) and its
// Digest: the lock the build labels its image with is then the lock file's
// digest, written or not.
func (l *Lock) Seal() error {
	l.Normalize()
	if l.SchemaVersion == 0 {
		l.SchemaVersion = SchemaVersion
	}
	d, err := l.ContentDigest()
	if err != nil {
		return err
	}
	l.Digest = d
	return nil
}

func encode(l *Lock) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(l); err != nil {
		return nil, fmt.Errorf("encoding lock %q: %w", l.Name, err)
	}
	return buf.Bytes(), nil
}

// Parse reads a lock strictly: unknown fields, trailing data, another schema
// version or a digest mismatch are errors. path is used in messages only.
func Parse(path string, b []byte) (*Lock, error) {
	var l Lock
	if err := strictjson.Decode(b, &l, "lock object"); err != nil {
		return nil, &FormatError{Path: path, Err: err}
	}
	if l.SchemaVersion != SchemaVersion {
		return nil, &FormatError{Path: path, Err: fmt.Errorf("schema_version %d is not supported (this imagectl reads version %d)", l.SchemaVersion, SchemaVersion)}
	}
	if l.Name == "" {
		return nil, &FormatError{Path: path, Err: errors.New("name is empty")}
	}
	got, err := l.ContentDigest()
	if err != nil {
		return nil, &FormatError{Path: path, Err: err}
	}
	if l.Digest != got {
		return nil, &TamperedError{Path: path, Want: l.Digest, Got: got}
	}
	return &l, nil
}

// Read reads and parses the lock at path.
func Read(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading lock: %w", err)
	}
	return Parse(path, b)
}

// Write marshals l and writes it to path atomically (temp file, then rename).
func Write(path string, l *Lock) error {
	b, err := Marshal(l)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o644)
}

// Path is where the lock of image name lives under dir: dir/<name>/lock.json.
func Path(dir, name string) string {
	return filepath.Join(dir, name, FileName)
}
