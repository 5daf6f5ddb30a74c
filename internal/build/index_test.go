package build

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

	"imagectl/internal/lock"
)

// fakeBuilder stands in for a buildkitd: it runs Solve's build function
// against a gateway that answers the base's config for the asked platform,
// makes an image from the config the function returns (one layer naming
// its architecture, so the same platform always gives the same image) and
// exports it as the solve options say: pushed to the registry, written to
// an OCI layout. It records what it built.
type fakeBuilder struct {
	mu     sync.Mutex
	arches []string
	opts   []client.SolveOpt
}

type fakeGateway struct{ gateway.Client }

func (fakeGateway) Solve(context.Context, gateway.SolveRequest) (*gateway.Result, error) {
	return gateway.NewResult(), nil
}

func (fakeGateway) ResolveImageConfig(_ context.Context, ref string, opt sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	cfg, err := json.Marshal(ocispecs.Image{Platform: *opt.ImageOpt.Platform, Config: ocispecs.ImageConfig{Env: []string{"PATH=/usr/bin:/bin"}}})
	return ref, "", cfg, err
}

func (f *fakeBuilder) Build(ctx context.Context, opt client.SolveOpt, _ string, bf gateway.BuildFunc, ch chan *client.SolveStatus) (*client.SolveResponse, error) {
	if ch != nil {
		defer close(ch)
	}
	res, err := bf(ctx, fakeGateway{})
	if err != nil {
		return nil, err
	}
	var cfg v1.ConfigFile
	if err := json.Unmarshal(res.Metadata[exptypes.ExporterImageConfigKey], &cfg); err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		mutate.Addendum{Layer: static.NewLayer([]byte("layer of "+cfg.Architecture), types.OCILayer)})
	if err != nil {
		return nil, err
	}
	if img, err = mutate.ConfigFile(mutate.ConfigMediaType(img, types.OCIConfigJSON), &cfg); err != nil {
		return nil, err
	}
	d, _ := img.Digest()
	size, _ := img.Size()
	f.mu.Lock()
	f.arches = append(f.arches, cfg.Architecture)
	f.opts = append(f.opts, opt)
	f.mu.Unlock()
	if ch != nil {
		ch <- &client.SolveStatus{Vertexes: []*client.Vertex{{Digest: digest.FromString(cfg.Architecture), Name: "fake solve " + cfg.Architecture}}}
	}
	attrs := opt.Exports[0].Attrs
	if attrs["push"] == "true" {
		if attrs["push-by-digest"] != "true" {
			return nil, errAttrs(attrs)
		}
		ref, err := name.NewDigest(attrs["name"] + "@" + d.String())
		if err != nil {
			return nil, err
		}
		if err := remote.Write(ref, img); err != nil {
			return nil, err
		}
	}
	for _, e := range opt.Exports[1:] {
		p, err := layout.FromPath(e.OutputDir)
		if err != nil {
			if p, err = layout.Write(e.OutputDir, empty.Index); err != nil {
				return nil, err
			}
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{ocispecs.AnnotationRefName: "latest"})); err != nil {
			return nil, err
		}
	}
	desc, _ := json.Marshal(ocispecs.Descriptor{MediaType: ocispecs.MediaTypeImageManifest, Digest: digest.Digest(d.String()), Size: size})
	return &client.SolveResponse{ExporterResponse: map[string]string{
		exptypes.ExporterImageDigestKey:     d.String(),
		exptypes.ExporterImageDescriptorKey: base64.StdEncoding.EncodeToString(desc),
	}}, nil
}

type errAttrs map[string]string

func (e errAttrs) Error() string {
	return "fake builder: a child must be pushed by digest, got " + strings.TrimSpace(strings.Join(mapPairs(e), " "))
}

func mapPairs(m map[string]string) []string {
	var s []string
	for k, v := range m {
		s = append(s, k+"="+v)
	}
	slices.Sort(s)
	return s
}

// localLock2 is unitLock2 with its base and staging repository on reg.
func localLock2(reg string) *lock.Lock {
	l := unitLock2()
	l.Base.Ref = reg + "/imagectl/debian-base:bookworm"
	l.Platforms[0].Base.Ref = l.Base.Ref
	l.Repos.Staging = reg + "/imagectl/staging/unit"
	return l
}

func armInit(t *testing.T) Option {
	t.Helper()
	p := filepath.Join(t.TempDir(), "init-arm64")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return WithPlatformInit("linux/arm64", p)
}

// A two-platform lock built on one builder and split over a builder per
// platform gives the same index and children: each platform is solved on
// its own builder only, pushed by digest, the index assembled with its
// platforms and pushed by digest, the tag moved to it, and both builders'
// progress reaches WithStatus's channel.
func TestSolveIndexSplitAcrossBuilders(t *testing.T) {
	reg := fakeRegistry(t)
	l := localLock2(reg)
	ctx := context.Background()

	one := &fakeBuilder{}
	r1, err := Solve(ctx, one, l, fakeInit(t), armInit(t), WithPush(true))
	if err != nil {
		t.Fatalf("Solve(one builder) = %v", err)
	}
	slices.Sort(one.arches)
	if diff := cmp.Diff([]string{"amd64", "arm64"}, one.arches); diff != "" {
		t.Errorf("one builder built (-want +got):\n%s", diff)
	}

	amd, arm := &fakeBuilder{}, &fakeBuilder{}
	ch := make(chan *client.SolveStatus)
	var names []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range ch {
			for _, v := range s.Vertexes {
				names = append(names, v.Name)
			}
		}
	}()
	r2, err := Solve(ctx, amd, l, fakeInit(t), armInit(t), WithPush(true), WithTag("candidate"),
		WithPlatformClient("linux/arm64", arm), WithStatus(ch))
	<-done
	if err != nil {
		t.Fatalf("Solve(split) = %v", err)
	}
	if diff := cmp.Diff([]string{"amd64"}, amd.arches); diff != "" {
		t.Errorf("default builder built (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"arm64"}, arm.arches); diff != "" {
		t.Errorf("arm64 builder built (-want +got):\n%s", diff)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"[linux/amd64] fake solve amd64", "[linux/arm64] fake solve arm64"}, names); diff != "" {
		t.Errorf("status vertexes (-want +got):\n%s", diff)
	}
	for _, b := range []*fakeBuilder{amd, arm} {
		if got := b.opts[0].Exports[0].Attrs["name"]; got != l.Repos.Staging {
			t.Errorf("child pushed to %q, want by digest to %s (the tag is the index's)", got, l.Repos.Staging)
		}
	}

	if r1.Digest != r2.Digest {
		t.Errorf("index digest: one builder %s, split %s; want the same", r1.Digest, r2.Digest)
	}
	if len(r1.Platforms) != 2 || len(r2.Platforms) != 2 {
		t.Fatalf("Result.Platforms = %+v / %+v, want two each", r1.Platforms, r2.Platforms)
	}
	for i, want := range []string{"linux/amd64", "linux/arm64"} {
		if r1.Platforms[i].Platform != want || r2.Platforms[i].Platform != want || r1.Platforms[i].Digest != r2.Platforms[i].Digest {
			t.Errorf("platform %d: %+v and %+v, want %s with one digest", i, r1.Platforms[i], r2.Platforms[i], want)
		}
		if r2.Platforms[i].Size == 0 || len(r2.Platforms[i].Layers) != 1 {
			t.Errorf("%s: size %d, %d layers; want the image read back", want, r2.Platforms[i].Size, len(r2.Platforms[i].Layers))
		}
	}
	if r2.Ref != l.Repos.Staging+"@"+r2.Digest || r2.Tag != l.Repos.Staging+":candidate" {
		t.Errorf("Result ref %q tag %q", r2.Ref, r2.Tag)
	}

	ref, _ := name.NewDigest(r2.Ref)
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("reading the pushed index: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("pushed index %+v, want an OCI index of two manifests", im)
	}
	for i, m := range im.Manifests {
		if m.Platform == nil || m.Platform.String() != r2.Platforms[i].Platform || m.Digest.String() != r2.Platforms[i].Digest || m.MediaType != types.OCIManifestSchema1 || len(m.Annotations) != 0 || m.ArtifactType != "" {
			t.Errorf("index manifest %d = %+v, want %s %s with its platform and no annotations", i, m, r2.Platforms[i].Platform, r2.Platforms[i].Digest)
		}
	}
	tag, _ := name.NewTag(r2.Tag)
	desc, err := remote.Head(tag)
	if err != nil || desc.Digest.String() != r2.Digest {
		t.Errorf("%s = %v, %v; want the index %s", r2.Tag, desc, err, r2.Digest)
	}
}

// Written to an OCI layout only, or neither pushed nor written, the index
// has the digest of the pushed one; the layout's index.json names it once
// ("latest"), its children and blobs are in the layout, and the
// per-platform layouts are gone.
func TestSolveIndexLayoutAndUnstored(t *testing.T) {
	reg := fakeRegistry(t)
	l := localLock2(reg)
	ctx := context.Background()
	pushed, err := Solve(ctx, &fakeBuilder{}, l, fakeInit(t), armInit(t), WithPush(true))
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	r, err := Solve(ctx, &fakeBuilder{}, l, fakeInit(t), armInit(t), WithOCILayout(dir), WithPlatformClient("linux/arm64", &fakeBuilder{}))
	if err != nil {
		t.Fatalf("Solve(oci layout) = %v", err)
	}
	if r.Digest != pushed.Digest || r.Ref != "" {
		t.Errorf("layout build: index %s ref %q, want %s and no ref", r.Digest, r.Ref, pushed.Digest)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, _ := top.IndexManifest()
	if len(tm.Manifests) != 1 || tm.Manifests[0].Digest.String() != r.Digest || tm.Manifests[0].Annotations[ocispecs.AnnotationRefName] != "latest" {
		t.Fatalf("layout index.json = %+v, want the index %s once, as latest", tm.Manifests, r.Digest)
	}
	if len(r.Platforms) != 2 || r.Platforms[1].Digest != pushed.Platforms[1].Digest || len(r.Platforms[1].Layers) != 1 {
		t.Errorf("layout Result.Platforms = %+v, want the pushed build's children read from the layout", r.Platforms)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("%s holds %d entries, want only the layout (the per-platform ones removed)", parent, len(ents))
	}

	r, err = Solve(ctx, &fakeBuilder{}, l, fakeInit(t), armInit(t))
	if err != nil {
		t.Fatalf("Solve(no push, no layout) = %v", err)
	}
	if r.Digest != pushed.Digest || len(r.Platforms) != 2 || r.Platforms[0].Digest != pushed.Platforms[0].Digest {
		t.Errorf("unstored build: %+v, want index %s and its children", r, pushed.Digest)
	}
}

// Each platform of a multi-platform build caches under its own tag; a
// single-platform lock keeps the given one.
func TestPlatformCache(t *testing.T) {
	reg := fakeRegistry(t)
	l := localLock2(reg)
	b := &fakeBuilder{}
	_, err := Solve(context.Background(), b, l, fakeInit(t), armInit(t),
		WithCacheFrom("type=registry,ref="+reg+"/cache/unit:main"),
		WithCacheTo("type=registry,ref="+reg+"/cache/unit:main,mode=max", "type=local,dest=/tmp/cache/"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range b.opts {
		for _, e := range o.CacheImports {
			got = append(got, "from "+e.Attrs["ref"])
		}
		for _, e := range o.CacheExports {
			got = append(got, "to "+e.Attrs["ref"]+e.Attrs["dest"]+" "+e.Attrs["mode"])
		}
	}
	slices.Sort(got)
	want := []string{
		"from " + reg + "/cache/unit:main-linux-amd64",
		"from " + reg + "/cache/unit:main-linux-arm64",
		"to /tmp/cache-linux-amd64 ",
		"to /tmp/cache-linux-arm64 ",
		"to " + reg + "/cache/unit:main-linux-amd64 max",
		"to " + reg + "/cache/unit:main-linux-arm64 max",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-platform caches (-want +got):\n%s", diff)
	}
}

// A platform client is used for a single-platform lock of that platform;
// a malformed platform is refused.
func TestWithPlatformClient(t *testing.T) {
	reg := fakeRegistry(t)
	view, err := localLock2(reg).ForPlatform("linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	def, arm := &fakeBuilder{}, &fakeBuilder{}
	if _, err := Solve(context.Background(), def, view, fakeInit(t), armInit(t), WithPlatformClient("linux/arm64", arm)); err != nil {
		t.Fatalf("Solve(arm64 lock) = %v", err)
	}
	if len(def.arches) != 0 || !slices.Equal(arm.arches, []string{"arm64"}) {
		t.Errorf("default builder built %v, arm64 builder %v; want only the arm64 builder", def.arches, arm.arches)
	}
	if _, err := Solve(context.Background(), nil, localLock2(reg), fakeInit(t), armInit(t), WithPlatformClient("linux/arm64", arm)); err == nil || !strings.Contains(err.Error(), "no buildkitd for linux/amd64") {
		t.Errorf("Solve(nil client, amd64 without a builder) = %v, want an error naming linux/amd64", err)
	}
	for _, p := range []string{"arm64", "", "linux/"} {
		if _, err := makeOptions(WithPlatformClient(p, arm)); err == nil || !strings.Contains(err.Error(), "OS/ARCH") {
			t.Errorf("WithPlatformClient(%q) = %v, want a platform error", p, err)
		}
	}
}
