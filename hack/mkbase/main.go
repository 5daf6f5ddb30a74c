// Command mkbase packs a root filesystem (from debootstrap) as a one-layer
// OCI image, reproducibly: entries sorted, mtimes clamped to
// SOURCE_DATE_EPOCH, numeric owners only, no device nodes.
//
//	mkbase tar ROOTFS OUT.tar.gz               write the gzipped layer tar
//	mkbase image LAYER.tar [--push REF] [--layout DIR] [--config FILE] [--index] [--created-by TEXT] [--arch ARCH]
//	                                           wrap it and push/write it
//	mkbase index --push REF IMAGE@DIGEST...    push an OCI index of pushed images
//
// --config names a JSON file holding the image config's "config" object
// (OCI image-spec: Env, Labels, Cmd, ...) that replaces the default one;
// --index pushes (and writes) an OCI image index with the image as its
// linux/amd64 manifest, shaped like a multi-platform upstream image.
// image prints the pushed digest (the index's with --index) on stdout.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"imagectl/hack/internal/rootfs"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkbase:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	sde, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	if len(args) < 1 {
		return errors.New("usage: mkbase tar ROOTFS OUT.tar.gz | mkbase image LAYER.tar [--push REF] [--layout DIR]")
	}
	switch args[0] {
	case "tar":
		if len(args) != 3 {
			return errors.New("usage: mkbase tar ROOTFS OUT.tar.gz")
		}
		return writeTar(args[1], args[2], sde)
	case "image":
		fs := flag.NewFlagSet("image", flag.ContinueOnError)
		var o imageOpts
		fs.StringVar(&o.push, "push", "", "push the image to this reference")
		fs.StringVar(&o.layout, "layout", "", "write the image into this OCI layout directory")
		fs.StringVar(&o.config, "config", "", "JSON file with the image config's config object (Env, Labels, Cmd, ...)")
		fs.BoolVar(&o.index, "index", false, "push an OCI image index with the image as its linux/amd64 manifest")
		fs.StringVar(&o.createdBy, "created-by", "", "the layer's history entry")
		fs.StringVar(&o.arch, "arch", "amd64", "the image's architecture (linux/ARCH), in its config and index entry")
		if len(args) < 2 {
			return errors.New("usage: mkbase image LAYER.tar [--push REF] [--layout DIR] [--config FILE] [--index] [--created-by TEXT]")
		}
		if err := fs.Parse(args[2:]); err != nil {
			return err
		}
		return image(args[1], o, sde)
	case "index":
		fs := flag.NewFlagSet("index", flag.ContinueOnError)
		push := fs.String("push", "", "push the index to this reference")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *push == "" || fs.NArg() == 0 {
			return errors.New("usage: mkbase index --push REF IMAGE@DIGEST [IMAGE@DIGEST...]")
		}
		return index(*push, fs.Args())
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Time{}, errors.New("SOURCE_DATE_EPOCH is not set")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", v)
	}
	return time.Unix(n, 0).UTC(), nil
}

// emptied lists directories whose files are left out (subdirectories are
// kept, empty): they only hold state of the machine that built the rootfs.
// pruned lists directories packed empty: the runtime provides their contents.
var (
	emptied = []string{"run", "tmp", "var/tmp", "var/lib/apt/lists", "var/cache/apt/archives", "var/log"}
	pruned  = map[string]bool{"dev": true, "proc": true, "sys": true}
)

// dropped lists files left out: caches whose bytes differ between two
// otherwise identical debootstrap runs (ldconfig's aux-cache records inodes
// and ctimes).
var dropped = map[string]bool{"var/cache/ldconfig/aux-cache": true}

func isEmptied(rel string) bool {
	for _, d := range emptied {
		if strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

func writeTar(root, out string, sde time.Time) error {
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return fmt.Errorf("rootfs %s: not a directory", root)
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	zw := gzip.NewWriter(f) // no name, no mtime: the same bytes every time
	tw := tar.NewWriter(zw)
	rw := rootfs.NewWriter(tw)
	rw.Clamp = sde
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if top, _, _ := strings.Cut(rel, "/"); pruned[top] && top != rel {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() && (isEmptied(rel) || dropped[rel]) {
			return nil
		}
		if strings.HasPrefix(rel, "var/cache/apt/") && strings.HasSuffix(rel, ".bin") {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return rw.Add(path, rel, fi)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Close()
	} else {
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("packing %s: %w", root, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mkbase: %s: %d entries, %d bytes of file data\n", out, rw.Entries, rw.Bytes)
	return nil
}

// imageOpts are mkbase image's flags.
type imageOpts struct {
	push, layout, config, createdBy string
	arch                            string
	index                           bool
}

// defaultConfig is the demo base's config.
func defaultConfig() v1.Config {
	return v1.Config{
		Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"},
		Cmd: []string{"/bin/bash"},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "imagectl debian-base",
			"org.opencontainers.image.description": "Debian bookworm minbase with python3, python3-venv, python3-pip, ca-certificates",
		},
	}
}

// readConfig decodes FILE strictly as an OCI config object.
func readConfig(file string) (v1.Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return v1.Config{}, fmt.Errorf("--config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c v1.Config
	if err := dec.Decode(&c); err != nil {
		return v1.Config{}, fmt.Errorf("--config %s: %w", file, err)
	}
	if len(c.Env) == 0 {
		return v1.Config{}, fmt.Errorf("--config %s: no Env (an image needs at least PATH)", file)
	}
	return c, nil
}

func image(layerTar string, o imageOpts, sde time.Time) error {
	config := defaultConfig()
	if o.config != "" {
		c, err := readConfig(o.config)
		if err != nil {
			return err
		}
		config = c
	}
	createdBy := o.createdBy
	if createdBy == "" {
		createdBy = "debootstrap --variant=minbase bookworm (hack/base.sh)"
	}
	layer, err := tarball.LayerFromFile(layerTar, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return fmt.Errorf("layer %s: %w", layerTar, err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: sde}, CreatedBy: createdBy},
	})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	if o.arch == "" {
		o.arch = "amd64"
	}
	cf.Architecture, cf.OS = o.arch, "linux"
	cf.Created = v1.Time{Time: sde}
	cf.Config = config
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: sde})
	if err != nil {
		return err
	}
	var (
		artifact interface {
			Digest() (v1.Hash, error)
		} = img
		idx v1.ImageIndex
	)
	if o.index {
		idx = mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: o.arch}},
		})
		artifact = idx
	}
	dig, err := artifact.Digest()
	if err != nil {
		return err
	}
	if o.layout != "" {
		p, err := layout.FromPath(o.layout)
		if err != nil {
			if p, err = layout.Write(o.layout, empty.Index); err != nil {
				return fmt.Errorf("layout %s: %w", o.layout, err)
			}
		}
		match := func(desc v1.Descriptor) bool {
			return desc.Annotations["org.opencontainers.image.ref.name"] == "bookworm"
		}
		ann := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "bookworm"})
		if idx != nil {
			err = p.ReplaceIndex(idx, match, ann)
		} else {
			err = p.ReplaceImage(img, match, ann)
		}
		if err != nil {
			return fmt.Errorf("layout %s: %w", o.layout, err)
		}
	}
	if o.push != "" {
		ref, err := name.ParseReference(o.push)
		if err != nil {
			return fmt.Errorf("--push %q: %w", o.push, err)
		}
		if idx != nil {
			err = remote.WriteIndex(ref, idx)
		} else {
			err = remote.Write(ref, img)
		}
		if err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
	}
	fmt.Println(dig.String())
	return nil
}

// index pushes an OCI image index of the pushed images refs (by digest), each
// entry's platform taken from its image config, and prints its digest.
func index(push string, refs []string) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, r := range refs {
		ref, err := name.ParseReference(r)
		if err != nil {
			return fmt.Errorf("image %q: %w", r, err)
		}
		img, err := remote.Image(ref)
		if err != nil {
			return fmt.Errorf("reading %s: %w", ref, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return fmt.Errorf("reading %s config: %w", ref, err)
		}
		mt, err := img.MediaType()
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{MediaType: mt, Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}},
		})
	}
	ref, err := name.ParseReference(push)
	if err != nil {
		return fmt.Errorf("--push %q: %w", push, err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	dig, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println(dig.String())
	return nil
}
