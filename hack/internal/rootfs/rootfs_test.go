package rootfs

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAdd(t *testing.T) {
	root := t.TempDir()
	old := time.Unix(1_600_000_000, 0)
	if err := os.WriteFile(filepath.Join(root, "a"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(root, "a"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(root, "c")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	clamp := time.Unix(1_700_000_000, 0)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	w := NewWriter(tw)
	w.Clamp = clamp
	for _, n := range []string{"a", "b", "c", "fifo"} {
		fi, err := os.Lstat(filepath.Join(root, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(filepath.Join(root, n), "usr/"+n, fi); err != nil {
			t.Fatalf("Add(%s) = %v", n, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name, Link string
		Type       byte
		Size       int64
		Clamped    bool
		Owner      string
	}
	var got []entry
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{h.Name, h.Linkname, h.Typeflag, h.Size, !h.ModTime.After(clamp), h.Uname + h.Gname})
	}
	want := []entry{
		{Name: "usr/a", Type: tar.TypeReg, Size: 4, Clamped: true},
		{Name: "usr/b", Link: "usr/a", Type: tar.TypeLink, Clamped: true},
		{Name: "usr/c", Link: "a", Type: tar.TypeSymlink, Clamped: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if w.Entries != 3 || w.Bytes != 4 {
		t.Errorf("Entries, Bytes = %d, %d; want 3, 4", w.Entries, w.Bytes)
	}
}
