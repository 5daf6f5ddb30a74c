package build

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"maps"
	"math/rand"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"imagectl/internal/lock"
)

// tarLayer is a gzip layer of the named files, each of the given size.
func tarLayer(t *testing.T, files map[string]int) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	rnd := rand.New(rand.NewSource(1))
	// A fixed order, as a build writes them.
	dirs := map[string]bool{}
	for _, n := range sortedKeys(files) {
		// Parent directories first, as a layer diff holds them.
		for d := path.Dir(n); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range sortedKeys(files) {
		b := make([]byte, files[n])
		rnd.Read(b)
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	tw.Close()
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func sortedKeys(m map[string]int) []string {
	return slices.Sorted(maps.Keys(m))
}

func pushTestImage(t *testing.T, host string) name.Digest {
	t.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		tarLayer(t, map[string]int{"opt/venv/lib/libbig.so": 300 << 10, "opt/venv/lib/torch/__init__.py": 2 << 10, "opt/venv/lib/unused.bin": 200 << 10}),
		tarLayer(t, map[string]int{"usr/bin/python3": 50 << 10, "etc/motd": 100}))
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Config(img, v1.Config{Env: []string{"PATH=/usr/bin"}, Entrypoint: []string{"/usr/bin/python3"}})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(host + "/test/estargz")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	if err := remote.Write(repo.Digest(h.String()), img); err != nil {
		t.Fatal(err)
	}
	return repo.Digest(h.String())
}

// TestPrioritize: every layer holding a listed file is written again as
// eStargz with those files first (before the prefetch landmark), the
// config's diff_ids follow, the image stays valid, a file no layer holds
// is counted, and the digest does not depend on the machine's cores.
func TestPrioritize(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := pushTestImage(t, host)
	files := []string{"/opt/venv/lib/torch/__init__.py", "/usr/bin/python3", "/opt/venv/lib/libbig.so", "/not/there"}
	ctx := context.Background()

	h, rep, err := prioritize(ctx, ref, nil, files)
	if err != nil {
		t.Fatalf("prioritize() error = %v", err)
	}
	if rep != (PrioritizeReport{Layers: 2, Files: 3, Missing: 1}) {
		t.Errorf("prioritize() report = %+v, want 2 layers, 3 files, 1 missing", rep)
	}
	if h.String() == ref.DigestStr() {
		t.Fatalf("prioritize() kept the digest %s", h)
	}
	img, err := remote.Image(ref.Context().Digest(h.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("the rewritten image is not valid: %v", err)
	}
	m, _ := img.Manifest()
	cfg, _ := img.ConfigFile()
	if cfg.Config.Entrypoint[0] != "/usr/bin/python3" {
		t.Errorf("config entrypoint = %v, want it kept", cfg.Config.Entrypoint)
	}
	layers, _ := img.Layers()
	for i, l := range layers {
		toc := m.Layers[i].Annotations[estargz.TOCJSONDigestAnnotation]
		if toc == "" || m.Layers[i].Annotations[estargz.StoreUncompressedSizeAnnotation] == "" {
			t.Fatalf("layer %d annotations = %v, want the TOC digest and uncompressed size", i, m.Layers[i].Annotations)
		}
		rc, _ := l.Compressed()
		b, _ := io.ReadAll(rc)
		rc.Close()
		r, err := estargz.Open(io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b))))
		if err != nil {
			t.Fatalf("layer %d is not eStargz: %v", i, err)
		}
		if got := r.TOCDigest().String(); got != toc {
			t.Errorf("layer %d TOC digest %s, annotation says %s", i, got, toc)
		}
		// The test layers' files are of 1970-01-01T00:00:00Z, which eStargz
		// cannot hold (its TOC leaves the time out and stargz-snapshotter
		// serves year 1): the rewrite makes them one second later.
		if e, ok := r.Lookup(map[int]string{0: "opt/venv/lib/torch/__init__.py", 1: "usr/bin/python3"}[i]); !ok || e.ModTime().Unix() != 1 {
			t.Errorf("layer %d: TOC modtime %v (found %v), want 1970-01-01T00:00:01Z", i, e.ModTime(), ok)
		}
		// The listed files, then the landmark, then the rest.
		var order []string
		ur, _ := l.Uncompressed()
		tr := tar.NewReader(ur)
		for {
			hd, err := tr.Next()
			if err != nil {
				break
			}
			if hd.Typeflag == tar.TypeReg {
				order = append(order, hd.Name)
			}
		}
		ur.Close()
		want := map[int][]string{
			0: {"opt/venv/lib/torch/__init__.py", "opt/venv/lib/libbig.so", estargz.PrefetchLandmark},
			1: {"usr/bin/python3", estargz.PrefetchLandmark},
		}[i]
		if len(order) < len(want) || strings.Join(order[:len(want)], ",") != strings.Join(want, ",") {
			t.Errorf("layer %d entries %v, want them to start %v", i, order, want)
		}
	}

	// No files: every layer, nothing prefetched.
	all, rep, err := RewriteEstargz(ctx, ref, nil)
	if err != nil || rep != (PrioritizeReport{Layers: 2}) {
		t.Fatalf("RewriteEstargz(no files) = %v, %+v, %v; want 2 layers rewritten", all, rep, err)
	}
	aimg, err := remote.Image(all)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(aimg); err != nil {
		t.Fatalf("the rewritten image is not valid: %v", err)
	}
	am, _ := aimg.Manifest()
	for i, d := range am.Layers {
		if d.Annotations[estargz.TOCJSONDigestAnnotation] == "" {
			t.Errorf("layer %d of the all-layers rewrite has no TOC digest", i)
		}
	}

	// Pinned parallelism: one core or many, the same digest.
	prev := runtime.GOMAXPROCS(1)
	h1, _, err := prioritize(ctx, ref, nil, files)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	if h1 != h {
		t.Errorf("prioritize() with GOMAXPROCS=1 gave %s, with %d gave %s: want one digest", h1, prev, h)
	}
}

func TestReadPrioritizedFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txt")
	os.WriteFile(good, []byte("# recorded\n/usr/bin/python3\n\n/opt/venv/lib/libtorch.so\n"), 0o644)
	got, err := ReadPrioritizedFiles(good)
	if err != nil || strings.Join(got, ",") != "/usr/bin/python3,/opt/venv/lib/libtorch.so" {
		t.Errorf("ReadPrioritizedFiles() = %v, %v", got, err)
	}
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("/usr/bin/python3\nopt/relative\n"), 0o644)
	if _, err := ReadPrioritizedFiles(bad); err == nil || !strings.Contains(err.Error(), bad+":2:") {
		t.Errorf("ReadPrioritizedFiles(relative path) error = %v, want one naming %s:2", err, bad)
	}
}

func TestCheckPrioritized(t *testing.T) {
	l := &lock.Lock{Name: "demo"}
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"gzip", []Option{WithPrioritizedFiles([]string{"/a"}), WithPush(true)}, "need estargz layers"},
		{"not pushed", []Option{WithPrioritizedFiles([]string{"/a"}), WithCompression(CompressionEstargz)}, "pushed by digest alone"},
		{"tagged", []Option{WithPrioritizedFiles([]string{"/a"}), WithCompression(CompressionEstargz), WithPush(true), WithTag("t")}, "pushed by digest alone"},
		{"ok", []Option{WithPrioritizedFiles([]string{"/a"}), WithCompression(CompressionEstargz), WithPush(true)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := makeOptions(append(tc.opts, WithInit("/bin/true"))...)
			if err != nil {
				t.Fatal(err)
			}
			err = checkPrioritized(l, o)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("checkPrioritized() = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := makeOptions(WithPrioritizedFiles([]string{"relative"})); err == nil {
		t.Errorf("WithPrioritizedFiles(relative) took it")
	}
}
