package build

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"imagectl/internal/lock"
	"imagectl/internal/logs"
)

// EstargzParallelism is how many parts an eStargz layer's tar is cut into
// and compressed at once when imagectl writes it (WithPrioritizedFiles).
// The parts fix the chunk boundaries, so the number is pinned rather than
// taken from the machine's cores: the same lock gives the same digest on
// a 2-core CI machine and a 16-core GPU host.
const EstargzParallelism = 4

// estargzLevel is the gzip level of the layers imagectl writes: gzip's
// default, as BuildKit's estargz exporter uses (estargz.Build's own default,
// best compression, takes minutes on a multi-GB CUDA layer).
const estargzLevel = gzip.DefaultCompression

// WithPrioritizedFiles lists the image's files, absolute paths in the order
// a workload first opened them (`imagectl verify --startup-files` records
// them), that eStargz layers hold first, before a prefetch landmark, so that
// a lazy pull (stargz-snapshotter) fetches them in one go at mount time
// instead of file by file on first read. It needs WithCompression("estargz")
// and a single-platform image pushed by digest: after BuildKit's estargz
// export, every layer holding one of the files is written again with them
// first (eStargz's estargz.Build, EstargzParallelism parts), and the image
// pushed by its new digest, which Result then reports. A file no layer holds
// is skipped. The default is none: BuildKit's estargz layers as exported,
// which the snapshotter fetches on demand only.
func WithPrioritizedFiles(paths []string) Option {
	return func(o *options) error {
		for i, p := range paths {
			if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\n\x00") {
				return fmt.Errorf("prioritized file %d %q: want an absolute path inside the image", i+1, p)
			}
		}
		o.prioritized = paths
		return nil
	}
}

// checkPrioritized refuses WithPrioritizedFiles where the rewrite cannot
// run: the layers must be estargz, and the one image pushed by digest (a
// tag or a layout would name BuildKit's digest, not the rewritten one).
func checkPrioritized(l *lock.Lock, o *options) error {
	if len(o.prioritized) == 0 {
		return nil
	}
	switch {
	case o.compression != CompressionEstargz:
		return fmt.Errorf("%s: prioritized files need estargz layers (compression %q)", l.Name, o.compression)
	case !o.push || o.tag != "" || o.ociLayout != "":
		return fmt.Errorf("%s: prioritized files need the image pushed by digest alone (no tag, no OCI layout)", l.Name)
	case len(l.Platforms) > 0:
		return fmt.Errorf("%s: prioritized files need a single-platform image (the lock has %d platforms)", l.Name, len(l.Platforms)+1)
	}
	return nil
}

// prioritizeResult rewrites the pushed image r (prioritize) and points r at
// the new digest.
func prioritizeResult(ctx context.Context, r *Result, o *options) error {
	ref, err := name.NewDigest(r.Ref, refNameOptions(r.Ref, o)...)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", r.Ref, err)
	}
	d, rep, err := RewriteEstargz(ctx, ref, o.prioritized, readBackOptions(ctx, o, ref.RegistryStr())...)
	if err != nil {
		return o.access.Classify(err)
	}
	logs.From(ctx).Info("estargz layers written with the prioritized files first", "image", d.String(),
		"exported", r.Digest, "layers", rep.Layers, "files", rep.Files, "missing", rep.Missing)
	r.Digest = d.DigestStr()
	r.Ref = d.String()
	r.Prioritized = &rep
	return nil
}

// ReadPrioritizedFiles reads a prioritized-files list: one absolute image
// path per line, in the order they are wanted; blank lines and lines
// starting with # are skipped. A bad line is an error naming file:line.
func ReadPrioritizedFiles(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading prioritized files: %w", err)
	}
	var out []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "/") {
			return nil, fmt.Errorf("%s:%d: %q: want an absolute path inside the image", file, i+1, line)
		}
		out = append(out, line)
	}
	return out, nil
}

// PrioritizeReport is what the rewrite of an estargz image did.
type PrioritizeReport struct {
	// Layers is how many layers were written again (the others are
	// BuildKit's as exported).
	Layers int `json:"layers"`
	// Files is how many of the listed files the layers put first; Missing
	// how many no layer holds.
	Files   int `json:"files"`
	Missing int `json:"missing"`
}

// RewriteEstargz writes the single-platform image ref again with eStargz
// layers and pushes it by digest to ref's repository: with files, every
// layer that holds one of them, those files first (what
// WithPrioritizedFiles does after a build); with none, every layer, with
// no prefetch (an existing gzip or zstd image made lazily pullable). The
// config and the manifest's other fields are kept; the diff_ids follow the
// new layers. Layers are built with EstargzParallelism parts, so the digest
// does not depend on the machine.
func RewriteEstargz(ctx context.Context, ref name.Digest, files []string, opts ...remote.Option) (name.Digest, PrioritizeReport, error) {
	h, rep, err := prioritize(ctx, ref, opts, files)
	if err != nil {
		return name.Digest{}, rep, err
	}
	return ref.Context().Digest(h.String()), rep, nil
}

// prioritize writes every layer of img that holds a listed file (every
// layer when files is empty) again as eStargz with those files first,
// pushes the blobs, the config and the manifest to ref's repository, and
// returns the new manifest's digest.
func prioritize(ctx context.Context, ref name.Digest, ropts []remote.Option, files []string) (v1.Hash, PrioritizeReport, error) {
	var rep PrioritizeReport
	ropts = append(slices.Clone(ropts), remote.WithContext(ctx))
	img, err := remote.Image(ref, ropts...)
	if err != nil {
		return v1.Hash{}, rep, fmt.Errorf("reading %s: %w", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return v1.Hash{}, rep, fmt.Errorf("reading the manifest of %s: %w", ref, err)
	}
	rawCfg, err := img.RawConfigFile()
	if err != nil {
		return v1.Hash{}, rep, fmt.Errorf("reading the config of %s: %w", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return v1.Hash{}, rep, err
	}
	dir, err := os.MkdirTemp("", "imagectl-estargz-")
	if err != nil {
		return v1.Hash{}, rep, err
	}
	defer os.RemoveAll(dir)

	// Each file belongs to the top-most layer that holds it (the one a
	// container sees); the layers' tars go to disk once, without the old
	// TOC and landmarks, so that estargz.Build reads them at random.
	tars := make([]string, len(layers))
	owner := map[string]int{}
	for i, l := range layers {
		tars[i] = fmt.Sprintf("%s/layer-%d.tar", dir, i)
		names, err := spoolTar(l, tars[i])
		if err != nil {
			return v1.Hash{}, rep, fmt.Errorf("reading layer %d of %s: %w", i+1, ref, err)
		}
		for _, n := range names {
			owner[n] = i
		}
	}
	perLayer := make([][]string, len(layers))
	seen := map[string]bool{}
	for _, f := range files {
		n := strings.TrimPrefix(path.Clean(f), "/")
		if seen[n] {
			continue
		}
		seen[n] = true
		i, ok := owner[n]
		if !ok {
			rep.Missing++
			continue
		}
		perLayer[i] = append(perLayer[i], n)
		rep.Files++
	}

	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(rawCfg, &cfg); err != nil {
		return v1.Hash{}, rep, fmt.Errorf("parsing the config of %s: %w", ref, err)
	}
	var rootfs v1.RootFS
	if err := json.Unmarshal(cfg["rootfs"], &rootfs); err != nil || len(rootfs.DiffIDs) != len(m.Layers) {
		return v1.Hash{}, rep, fmt.Errorf("the config of %s: rootfs does not list the manifest's %d layers", ref, len(m.Layers))
	}
	repo := ref.Context()
	for i, fs := range perLayer {
		if len(fs) == 0 && len(files) > 0 {
			continue
		}
		l, toc, err := buildEstargz(ctx, tars[i], fmt.Sprintf("%s/layer-%d.estargz", dir, i), fs)
		rep.Files -= toc.missed
		rep.Missing += toc.missed
		if err != nil {
			return v1.Hash{}, rep, fmt.Errorf("writing layer %d of %s as eStargz: %w", i+1, ref, err)
		}
		if err := remote.WriteLayer(repo, l, ropts...); err != nil {
			return v1.Hash{}, rep, fmt.Errorf("pushing layer %d of %s: %w", i+1, ref, err)
		}
		d, _ := l.Digest()
		diffID, _ := l.DiffID()
		size, _ := l.Size()
		ann := map[string]string{}
		for k, v := range m.Layers[i].Annotations {
			ann[k] = v
		}
		ann[estargz.TOCJSONDigestAnnotation] = toc.tocDigest
		ann[estargz.StoreUncompressedSizeAnnotation] = fmt.Sprint(toc.uncompressed)
		m.Layers[i] = v1.Descriptor{MediaType: types.OCILayer, Digest: d, Size: size, Annotations: ann}
		rootfs.DiffIDs[i] = diffID
		rep.Layers++
	}
	if rep.Layers == 0 {
		h, _ := v1.NewHash(ref.DigestStr())
		return h, rep, nil
	}
	rb, err := json.Marshal(rootfs)
	if err != nil {
		return v1.Hash{}, rep, err
	}
	cfg["rootfs"] = rb
	newCfg, err := json.Marshal(cfg)
	if err != nil {
		return v1.Hash{}, rep, err
	}
	cl := static.NewLayer(newCfg, m.Config.MediaType)
	if err := remote.WriteLayer(repo, cl, ropts...); err != nil {
		return v1.Hash{}, rep, fmt.Errorf("pushing the config of %s: %w", ref, err)
	}
	m.Config.Digest, _ = cl.Digest()
	m.Config.Size = int64(len(newCfg))
	raw, err := json.Marshal(m)
	if err != nil {
		return v1.Hash{}, rep, err
	}
	mt := m.MediaType
	if mt == "" {
		mt = types.OCIManifestSchema1
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return v1.Hash{}, rep, err
	}
	if err := remote.Put(repo.Digest(h.String()), rawManifest{raw, mt}, ropts...); err != nil {
		return v1.Hash{}, rep, fmt.Errorf("pushing the manifest of %s: %w", repo.Digest(h.String()), err)
	}
	return h, rep, nil
}

// rawManifest is a manifest's bytes as remote.Put takes them.
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// spoolTar writes l's uncompressed tar to dst without the eStargz TOC and
// landmark entries an estargz layer carries (estargz.Build adds its own),
// and returns the regular files' names.
func spoolTar(l v1.Layer, dst string) ([]string, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	f, err := os.Create(dst)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(rc)
	tw := tar.NewWriter(f)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		n := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		switch n {
		case estargz.TOCTarName, estargz.PrefetchLandmark, estargz.NoPrefetchLandmark:
			continue
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, n)
		}
		// eStargz cannot hold 1970-01-01T00:00:00Z (fileEpoch): a base
		// layer's file of that time gets one second later.
		if h.ModTime.Unix() == 0 {
			h.ModTime = time.Unix(1, 0)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return names, f.Close()
}

type tocInfo struct {
	tocDigest    string
	uncompressed int64
	// missed is how many of the layer's files estargz.Build could not put
	// first (a parent directory the layer does not hold).
	missed int
}

// buildEstargz writes the tar at src as an eStargz blob at dst with files
// first and returns it as a layer.
func buildEstargz(ctx context.Context, src, dst string, files []string) (v1.Layer, tocInfo, error) {
	in, err := os.Open(src)
	if err != nil {
		return nil, tocInfo{}, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return nil, tocInfo{}, err
	}
	var missed []string
	blob, err := estargz.Build(io.NewSectionReader(in, 0, st.Size()),
		estargz.WithContext(ctx),
		estargz.WithPrioritizedFiles(files),
		estargz.WithAllowPrioritizeNotFound(&missed),
		estargz.WithParallelism(EstargzParallelism),
		estargz.WithCompressionLevel(estargzLevel))
	if err != nil {
		return nil, tocInfo{}, err
	}
	out, err := os.Create(dst)
	if err != nil {
		blob.Close()
		return nil, tocInfo{}, err
	}
	defer out.Close()
	h, size, err := v1.SHA256(io.TeeReader(blob, out))
	if cerr := blob.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, tocInfo{}, err
	}
	if err := out.Close(); err != nil {
		return nil, tocInfo{}, err
	}
	usize, err := blob.UncompressedSize()
	if err != nil {
		return nil, tocInfo{}, err
	}
	diffID, err := v1.NewHash(blob.DiffID().String())
	if err != nil {
		return nil, tocInfo{}, err
	}
	return &fileLayer{path: dst, digest: h, diffID: diffID, size: size},
		tocInfo{tocDigest: blob.TOCDigest().String(), uncompressed: usize, missed: len(missed)}, nil
}

// fileLayer is a gzip (eStargz) layer blob on disk whose digests are known.
type fileLayer struct {
	path           string
	digest, diffID v1.Hash
	size           int64
}

func (l *fileLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)  { return os.Open(l.path) }
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return readCloser{zr, func() error { zr.Close(); return f.Close() }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }
