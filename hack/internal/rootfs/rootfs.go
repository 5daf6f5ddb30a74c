// Package rootfs writes a root filesystem's entries into an image layer
// tar the same way for every fixture that packs one (hack/mkbase's Debian
// base, hack/gpu/gputool's GPU machine base): numeric owners only, no
// access or change times, no PAX records beyond what the format needs,
// hard links kept as links to their first path, device nodes, sockets and
// pipes left out, and mtimes clamped when asked.
package rootfs

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Writer adds files to a tar stream. The zero Clamp keeps mtimes as they
// are.
type Writer struct {
	tw *tar.Writer
	// Clamp, when not zero, is the latest mtime written
	// (SOURCE_DATE_EPOCH); mtimes are truncated to the second either way.
	Clamp time.Time
	links map[inode]string
	// Entries and Bytes count what was written: headers and file data.
	Entries, Bytes int64
}

type inode struct{ dev, ino uint64 }

// NewWriter returns a Writer over tw.
func NewWriter(tw *tar.Writer) *Writer {
	return &Writer{tw: tw, links: map[inode]string{}}
}

// Add writes the file at path, whose Lstat is fi, as rel (slash-separated,
// relative to the layer's root). Device nodes, sockets and named pipes are
// skipped without error.
func (w *Writer) Add(path, rel string, fi fs.FileInfo) error {
	mode := fi.Mode()
	if mode&(fs.ModeSocket|fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice) != 0 {
		return nil // no device nodes, sockets or pipes in an image layer
	}
	link := ""
	if mode&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(path); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	hdr.Name = rel
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	hdr.Format = tar.FormatPAX
	hdr.PAXRecords = nil
	mt := fi.ModTime().Truncate(time.Second)
	if !w.Clamp.IsZero() && mt.After(w.Clamp) {
		mt = w.Clamp
	}
	hdr.ModTime = mt
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && mode.IsRegular() && st.Nlink > 1 {
		k := inode{uint64(st.Dev), uint64(st.Ino)}
		if first, ok := w.links[k]; ok {
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
		} else {
			w.links[k] = rel
		}
	}
	if err := w.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	w.Entries++
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	n, err := io.Copy(w.tw, src)
	w.Bytes += n
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
