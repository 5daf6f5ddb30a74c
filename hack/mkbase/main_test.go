package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func mkRootfs(t *testing.T, mtime time.Time) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"usr/bin", "var/cache/ldconfig", "dev/pts", "var/lib/apt/lists/partial", "var/log/apt", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"usr/bin/python3.11":            "python",
		"etc/os-release":                "bookworm",
		"var/lib/apt/lists/deb_Release": "lists",
		"var/log/apt/history.log":       "log",
		"tmp/x":                         "tmp",
		"var/cache/ldconfig/aux-cache":  "inodes",
		"dev/pts/ptmx":                  "dev",
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, "usr/bin/python3.11"), filepath.Join(root, "usr/bin/python3-hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("python3.11", filepath.Join(root, "usr/bin/python3")); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error {
		os.Chtimes(p, mtime, mtime)
		return nil
	})
	return root
}

func TestWriteTarReproducible(t *testing.T) {
	sde := time.Unix(1704067200, 0).UTC()
	var outs [][]byte
	// Two rootfs copies made at different times give the same bytes.
	for _, mt := range []time.Time{time.Now(), time.Now().Add(time.Hour)} {
		out := filepath.Join(t.TempDir(), "layer.tar.gz")
		if err := writeTar(mkRootfs(t, mt), out, sde); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, b)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("two packs of the same tree made at different times differ")
	}

	zr, err := gzip.NewReader(bytes.NewReader(outs[0]))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: Uname/Gname = %q/%q, want none", h.Name, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(sde) {
			t.Errorf("%s: ModTime = %v, want clamped to %v", h.Name, h.ModTime, sde)
		}
		// The first name in walk order carries the data, later ones link to it.
		if h.Name == "usr/bin/python3.11" && (h.Typeflag != tar.TypeLink || h.Linkname != "usr/bin/python3-hard") {
			t.Errorf("hard link packed as type %c -> %q, want a link to usr/bin/python3-hard", h.Typeflag, h.Linkname)
		}
		if h.Name == "usr/bin/python3" && (h.Typeflag != tar.TypeSymlink || h.Linkname != "python3.11") {
			t.Errorf("symlink packed as type %c -> %q", h.Typeflag, h.Linkname)
		}
	}
	want := []string{
		"dev/", "etc/", "etc/os-release", "tmp/", "usr/", "usr/bin/", "usr/bin/python3",
		"usr/bin/python3-hard", "usr/bin/python3.11", "var/", "var/cache/", "var/cache/ldconfig/", "var/lib/", "var/lib/apt/",
		"var/lib/apt/lists/", "var/lib/apt/lists/partial/", "var/log/", "var/log/apt/",
	}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
}

func TestImagePushReproducible(t *testing.T) {
	sde := time.Unix(1704067200, 0).UTC()
	layer := filepath.Join(t.TempDir(), "layer.tar.gz")
	if err := writeTar(mkRootfs(t, time.Now()), layer, sde); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	var digests []string
	for i, ref := range []string{host + "/imagectl/debian-base:bookworm", host + "/other/base:x"} {
		out := captureStdout(t, func() error {
			return image(layer, imageOpts{push: ref, layout: filepath.Join(t.TempDir(), "oci")}, sde)
		})
		digests = append(digests, strings.TrimSpace(out))
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(r)
		if err != nil {
			t.Fatalf("pull %d %s: %v", i, ref, err)
		}
		d, _ := img.Digest()
		if d.String() != digests[i] {
			t.Errorf("pushed %s has digest %s, mkbase printed %s", ref, d, digests[i])
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !cf.Created.Time.Equal(sde) || cf.OS != "linux" || cf.Architecture != "amd64" {
			t.Errorf("config: created %v os %s arch %s, want %v linux amd64", cf.Created.Time, cf.OS, cf.Architecture, sde)
		}
		mt, _ := img.MediaType()
		if mt != types.OCIManifestSchema1 {
			t.Errorf("manifest media type %s, want %s", mt, types.OCIManifestSchema1)
		}
	}
	if digests[0] != digests[1] || !strings.HasPrefix(digests[0], "sha256:") {
		t.Errorf("two image runs printed %q and %q, want the same digest", digests[0], digests[1])
	}
}

func captureStdout(t *testing.T, f func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	ferr := f()
	os.Stdout = old
	w.Close()
	b, _ := io.ReadAll(r)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return string(b)
}

func TestImageIndexWithConfig(t *testing.T) {
	sde := time.Unix(1704067200, 0).UTC()
	dir := t.TempDir()
	layer := filepath.Join(dir, "layer.tar.gz")
	if err := writeTar(mkRootfs(t, time.Now()), layer, sde); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "config.json")
	want := v1.Config{
		Env:    []string{"PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/bin:/bin", "CUDA_VERSION=12.1.1"},
		Labels: map[string]string{"maintainer": "NVIDIA CORPORATION <cudatools@nvidia.com>"},
		Cmd:    []string{"/bin/bash"},
	}
	b, _ := json.Marshal(want)
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/nvidia/cuda:12.1.1-runtime-ubuntu22.04"
	out := captureStdout(t, func() error {
		return image(layer, imageOpts{push: ref, config: conf, index: true, createdBy: "fixture"}, sde)
	})
	r, _ := name.ParseReference(ref)
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatalf("remote.Index(%s): %v", ref, err)
	}
	if d, _ := idx.Digest(); d.String() != strings.TrimSpace(out) {
		t.Errorf("index digest %s, mkbase printed %s", d, out)
	}
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("media type %s, want %s", mt, types.OCIImageIndex)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || im.Manifests[0].Platform.String() != "linux/amd64" {
		t.Fatalf("index manifests %+v, want one linux/amd64", im.Manifests)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, cf.Config); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	if len(cf.History) != 1 || cf.History[0].CreatedBy != "fixture" {
		t.Errorf("history %+v, want one entry created by fixture", cf.History)
	}

	// A config file with an unknown field is refused, naming the file.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"Env":["PATH=/bin"],"Labelz":{}}`), 0o644)
	if err := image(layer, imageOpts{config: bad}, sde); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("image with %s = %v, want an error naming it", bad, err)
	}
}
