package sbom

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// maxFile bounds what the SBOM reads of one file (the dpkg database of a
// CUDA base is about 1 MiB, the init a few MiB).
const maxFile = 64 << 20

// overlay is the view from the top of an image of the few paths the SBOM
// needs, built by reading layers top-down as the container runtime stacks
// them: a path found in an upper layer hides the same path below, and a
// whiteout (.wh.NAME) or an opaque directory (.wh..wh..opq) hides what lies
// below it.
type overlay struct {
	want  func(p string) bool
	files map[string][]byte // path -> content of the topmost regular file
	links map[string]string // path -> symlink target
	// gone are paths (and everything under them) that an upper layer
	// removed, replaced or made opaque.
	gone map[string]bool
}

func newOverlay(want func(string) bool) *overlay {
	return &overlay{want: want, files: map[string][]byte{}, links: map[string]string{}, gone: map[string]bool{}}
}

// hidden reports whether p is already decided by an upper layer.
func (o *overlay) hidden(p string) bool {
	if _, ok := o.files[p]; ok {
		return true
	}
	if _, ok := o.links[p]; ok {
		return true
	}
	for q := p; ; q = path.Dir(q) {
		if o.gone[q] {
			return true
		}
		if q == "/" {
			return false
		}
	}
}

// read adds one layer, below every layer read so far.
func (o *overlay) read(ctx context.Context, l v1.Layer) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string][]byte{}
	links := map[string]string{}
	var gone []string
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the layer's tar: %w", err)
		}
		p := path.Clean("/" + h.Name)
		dir, base := path.Split(p)
		dir = path.Clean(dir)
		switch {
		case base == ".wh..wh..opq":
			gone = append(gone, dir)
			continue
		case strings.HasPrefix(base, ".wh."):
			gone = append(gone, path.Join(dir, strings.TrimPrefix(base, ".wh.")))
			continue
		}
		if o.hidden(p) || !o.want(p) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeReg:
			b, err := io.ReadAll(io.LimitReader(tr, maxFile+1))
			if err != nil {
				return fmt.Errorf("reading %s: %w", p, err)
			}
			if len(b) > maxFile {
				return fmt.Errorf("%s is over %d bytes", p, maxFile)
			}
			files[p] = b
		case tar.TypeSymlink:
			links[p] = h.Linkname
		}
	}
	// What this layer holds or removes decides for the layers below it, not
	// for itself: a whiteout and a new file of one name in the same layer
	// mean the new file.
	for p, b := range files {
		o.files[p] = b
	}
	for p, t := range links {
		o.links[p] = t
	}
	for _, p := range gone {
		if _, ok := files[p]; !ok {
			o.gone[p] = true
		}
	}
	return nil
}

// file returns the content at p in the stacked view, following one level of
// symlink (as /etc/os-release -> ../usr/lib/os-release).
func (o *overlay) file(p string) ([]byte, bool) {
	if b, ok := o.files[p]; ok {
		return b, true
	}
	if t, ok := o.links[p]; ok {
		if !path.IsAbs(t) {
			t = path.Join(path.Dir(p), t)
		}
		b, ok := o.files[path.Clean(t)]
		return b, ok
	}
	return nil, false
}

// osReleaseDecided reports whether the layers read so far decide the
// image's os-release: found (through its symlink, too), or both paths
// removed.
func (o *overlay) osReleaseDecided() bool {
	for _, p := range osRelease {
		if _, ok := o.file(p); ok {
			return true
		}
	}
	return o.hidden(osRelease[0]) && o.hidden(osRelease[1])
}
