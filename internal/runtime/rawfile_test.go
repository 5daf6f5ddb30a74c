package runtime

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRawFiles: the init's system-call file helpers read a file of any size
// (mountinfo can pass 4 KiB), say fs.ErrNotExist for a missing one as
// os.ReadFile does, create a new file with exactly the asked mode whatever
// the umask, refuse to overwrite one, and truncate when writing a sysctl.
func TestRawFiles(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("21 26 0:20 / /proc rw,relatime - proc proc rw\n"), 300)
	path := filepath.Join(dir, "mountinfo")
	if err := os.WriteFile(path, big, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readFile(path)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("readFile = %d bytes, %v; want the %d bytes written", len(got), err, len(big))
	}
	if _, err := readFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readFile(missing) = %v, want fs.ErrNotExist", err)
	}

	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	fp := filepath.Join(dir, "fingerprint.json")
	if err := writeNewFile(fp, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fp); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("writeNewFile mode = %v, %v; want 0644 under umask 077", fi.Mode().Perm(), err)
	}
	if err := writeNewFile(fp, []byte("x"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("writeNewFile over an existing file = %v, want fs.ErrExist", err)
	}
	if err := writeExisting(fp, []byte("7\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(fp); string(b) != "7\n" {
		t.Errorf("after writeExisting the file holds %q, want %q", b, "7\n")
	}
	if err := writeExisting(filepath.Join(dir, "nosuch"), []byte("1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("writeExisting(missing) = %v, want fs.ErrNotExist", err)
	}
}
