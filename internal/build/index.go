package build

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"imagectl/internal/lock"
)

// clientFor is the buildkitd that builds platform p: WithPlatformClient's,
// else def.
func (o *options) clientFor(p ocispecs.Platform, def Client) Client {
	if c, ok := o.clients[platformString(p)]; ok {
		return c
	}
	return def
}

// solveIndex builds every platform of l on its own client (each solve a
// single-platform image pushed by digest, or written to an OCI layout of
// its own), at once, then assembles the OCI image index with ggcr from the
// children's descriptors and their platforms, pushes it by digest and
// moves the tag (WithTag) last. The index depends only on the children, so
// one builder and one per platform give the same digest.
func solveIndex(ctx context.Context, clients []Client, l *lock.Lock, o *options, targets []buildTarget, arts map[digest.Digest]Artifact, target string) (_ *Result, err error) {
	// Each platform's export gets its own layout: buildkit's client
	// updates a layout's index.json under a lock it does not wait for.
	layouts := make([]string, len(targets))
	if o.ociLayout != "" {
		defer func() {
			for _, d := range layouts {
				if d != "" {
					os.RemoveAll(d)
				}
			}
		}()
		for i, t := range targets {
			d, err := os.MkdirTemp(filepath.Dir(o.ociLayout), "."+filepath.Base(o.ociLayout)+"-"+platformSlug(t.platform)+"-")
			if err != nil {
				return nil, fmt.Errorf("oci layout of %s: %w", platformString(t.platform), err)
			}
			layouts[i] = d
		}
	}
	sopts := make([]client.SolveOpt, len(targets))
	for i, t := range targets {
		po := *o
		po.tag, po.ociLayout = "", layouts[i]
		po.cacheFrom = platformCache(o.cacheFrom, t.platform)
		po.cacheTo = platformCache(o.cacheTo, t.platform)
		sopt, _, err := solveOpt(t.lock, &po)
		if err != nil {
			return nil, err
		}
		sopts[i] = sopt
	}

	chans, forwarded := forwardStatus(o, targets)
	resps := make([]*client.SolveResponse, len(targets))
	g, gctx := errgroup.WithContext(ctx)
	for i, t := range targets {
		g.Go(func() error {
			resp, err := solveRefetching(gctx, clients[i], o, sopts[i], t, chans[i], arts)
			if err != nil {
				return fmt.Errorf("building %s for %s: %w", l.Name, platformString(t.platform), err)
			}
			resps[i] = resp
			return nil
		})
	}
	err = g.Wait()
	forwarded()
	if err != nil {
		return nil, err
	}

	repo := o.name
	if repo == "" {
		repo = l.Repos.Staging
	}
	adds := make([]mutate.IndexAddendum, len(targets))
	for i, t := range targets {
		desc, err := exportedDescriptor(resps[i])
		if err != nil {
			return nil, fmt.Errorf("building %s for %s: %w", l.Name, platformString(t.platform), err)
		}
		adds[i] = mutate.IndexAddendum{Add: describedManifest{desc}, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: t.platform.OS, Architecture: t.platform.Architecture, Variant: t.platform.Variant},
		}}
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	h, err := idx.Digest()
	if err != nil {
		return nil, fmt.Errorf("assembling the index of %s: %w", l.Name, err)
	}
	r := &Result{Digest: h.String(), LockDigest: l.Digest, OCILayout: o.ociLayout, CUDADuplicates: cudaDuplicatesOf(targets)}
	if o.ociLayout != "" {
		if err := writeLayout(o.ociLayout, layouts, idx, h, o.tag, target); err != nil {
			return nil, fmt.Errorf("writing the index of %s to the oci layout %s: %w", l.Name, o.ociLayout, err)
		}
	}
	if o.push {
		if err := pushIndex(ctx, o, repo, idx, h); err != nil {
			return nil, err
		}
		r.Ref = repo + "@" + r.Digest
		if o.tag != "" {
			r.Tag = repo + ":" + o.tag
		}
	}
	if r.Ref == "" && r.OCILayout == "" {
		for i, t := range targets {
			r.Platforms = append(r.Platforms, PlatformImage{Platform: platformString(t.platform), Digest: adds[i].Add.(describedManifest).desc.Digest.String()})
		}
		return r, nil
	}
	if err := readIndex(ctx, r, o, targets); err != nil {
		return nil, err
	}
	return r, nil
}

// pushIndex puts the manifest of idx by digest in repo (its children are
// there already, pushed by digest) and then moves the tag, if any, to it.
func pushIndex(ctx context.Context, o *options, repo string, idx v1.ImageIndex, h v1.Hash) error {
	ropts := append(o.access.RemoteOptions(), remote.WithContext(ctx))
	ref, err := name.NewDigest(repo+"@"+h.String(), refNameOptions(repo, o)...)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", repo, err)
	}
	if err := remote.Put(ref, idx, ropts...); err != nil {
		return o.access.Classify(fmt.Errorf("pushing the index %s: %w", ref, err))
	}
	if o.tag == "" {
		return nil
	}
	tag, err := name.NewTag(repo+":"+o.tag, refNameOptions(repo, o)...)
	if err != nil {
		return fmt.Errorf("tag %q: %w", o.tag, err)
	}
	if err := remote.Tag(tag, idx, ropts...); err != nil {
		return o.access.Classify(fmt.Errorf("tagging %s as %s: %w", ref, tag, err))
	}
	return nil
}

// exportedDescriptor is the manifest descriptor buildkitd's image exporter
// reports.
func exportedDescriptor(resp *client.SolveResponse) (v1.Descriptor, error) {
	b64 := resp.ExporterResponse[exptypes.ExporterImageDescriptorKey]
	dt, err := base64.StdEncoding.DecodeString(b64)
	var desc ocispecs.Descriptor
	if err == nil && b64 != "" {
		err = json.Unmarshal(dt, &desc)
	}
	if b64 == "" || err != nil || desc.Digest == "" {
		return v1.Descriptor{}, fmt.Errorf("buildkitd reported no image descriptor (%s: %v)", exptypes.ExporterImageDescriptorKey, err)
	}
	h, err := v1.NewHash(desc.Digest.String())
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("buildkitd reported image digest %q: %w", desc.Digest, err)
	}
	if d := resp.ExporterResponse[exptypes.ExporterImageDigestKey]; d != "" && d != h.String() {
		return v1.Descriptor{}, fmt.Errorf("buildkitd reported image digest %s and descriptor %s", d, h)
	}
	return v1.Descriptor{MediaType: types.MediaType(desc.MediaType), Size: desc.Size, Digest: h}, nil
}

// describedManifest is a child known by the descriptor buildkitd reported
// for it: the index names each child by media type, digest and size (and
// its platform), nothing else (ggcr would add an artifactType for an
// image, and a layout's annotations), so that the index is the same
// whether the children were pushed, written to a layout or neither. The
// children are stored already; the index is written as a manifest only,
// and Solve reads it back, children included.
type describedManifest struct{ desc v1.Descriptor }

func (m describedManifest) MediaType() (types.MediaType, error) { return m.desc.MediaType, nil }
func (m describedManifest) Digest() (v1.Hash, error)            { return m.desc.Digest, nil }
func (m describedManifest) Size() (int64, error)                { return m.desc.Size, nil }

// Annotations buildkit's client gives an image in an OCI layout's
// index.json.
const annotationImageName = "io.containerd.image.name"

// writeLayout moves the blobs of every platform's layout into dir (by hard
// link where it can), writes the index's manifest as a blob and records it
// in dir's index.json as buildkit's client records an image: ref.name
// "latest" (or the tag), and the image name when pushed, replacing the
// entry of the same names.
func writeLayout(dir string, layouts []string, idx v1.ImageIndex, h v1.Hash, tag, target string) error {
	for _, src := range layouts {
		if err := linkBlobs(filepath.Join(src, "blobs"), filepath.Join(dir, "blobs")); err != nil {
			return err
		}
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return err
		}
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return err
	}
	if err := p.WriteBlob(h, io.NopCloser(bytes.NewReader(raw))); err != nil {
		return err
	}
	ann := map[string]string{ocispecs.AnnotationRefName: "latest"}
	if target != "" {
		ann = map[string]string{annotationImageName: target, ocispecs.AnnotationRefName: tag}
	}
	if err := p.RemoveDescriptors(func(d v1.Descriptor) bool {
		return d.Annotations[ocispecs.AnnotationRefName] == ann[ocispecs.AnnotationRefName] && d.Annotations[annotationImageName] == ann[annotationImageName]
	}); err != nil {
		return err
	}
	return p.AppendDescriptor(v1.Descriptor{MediaType: types.OCIImageIndex, Digest: h, Size: int64(len(raw)), Annotations: ann})
}

// linkBlobs hard-links (else copies) every file under src to the same
// path under dst, leaving the ones dst has.
func linkBlobs(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if _, err := os.Stat(to); err == nil {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.Link(path, to); err == nil || errors.Is(err, fs.ErrExist) {
			return nil
		}
		return copyFile(path, to)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(to), ".blob-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), to)
}

// platformSlug is "linux-arm64" for linux/arm64.
func platformSlug(p ocispecs.Platform) string {
	return strings.ReplaceAll(platformString(p), "/", "-")
}

// platformCache gives each platform of a multi-platform build a cache of
// its own: a registry cache's tag gets "-OS-ARCH" appended
// (cache/demo:main becomes cache/demo:main-linux-arm64), a local cache's
// directories too. One cache ref written by two builds at once would keep
// only the last one's records.
func platformCache(entries []client.CacheOptionsEntry, p ocispecs.Platform) []client.CacheOptionsEntry {
	slug := platformSlug(p)
	out := make([]client.CacheOptionsEntry, 0, len(entries))
	for _, e := range entries {
		attrs := make(map[string]string, len(e.Attrs))
		for k, v := range e.Attrs {
			attrs[k] = v
		}
		switch e.Type {
		case "registry":
			if ref, err := name.ParseReference(attrs["ref"]); err == nil {
				if t, ok := ref.(name.Tag); ok {
					attrs["ref"] = t.Context().Tag(t.TagStr() + "-" + slug).String()
				}
			}
		case "local":
			for _, k := range []string{"src", "dest"} {
				if v, ok := attrs[k]; ok && v != "" {
					attrs[k] = strings.TrimRight(v, "/") + "-" + slug
				}
			}
		}
		out = append(out, client.CacheOptionsEntry{Type: e.Type, Attrs: attrs})
	}
	return out
}
