package build

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/solver/errdefs"
	"github.com/moby/buildkit/util/grpcerrors"
	"google.golang.org/grpc/codes"

	"imagectl/internal/exitcode"
	"imagectl/internal/initconfig"
)

func TestE2EDemoBuildInstallsLockedVersions(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	l := e.lock(t, uniq("demo"), "1.0.0", smallCore)
	// podman names the image after the path: it must be lowercase.
	dir, err := os.MkdirTemp("", "imagectl-build-e2e-layout-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true), WithOCILayout(dir))
	if err != nil {
		t.Fatalf("Solve(demo) error: %v", err)
	}
	t.Logf("built %s: %d bytes, %d layers", r.Ref, r.Size, len(r.Layers))
	if !strings.HasPrefix(r.Digest, "sha256:") || r.Ref != l.Repos.Staging+"@"+r.Digest {
		t.Errorf("Result = %+v, want the image pushed by digest to %s", r, l.Repos.Staging)
	}
	var names []string
	for _, li := range r.Layers {
		if li.Name != "base" {
			names = append(names, li.Name)
		}
	}
	if got, want := strings.Join(names, ","), "system,venv,big:demo-core,periphery,init,runtime"; got != want {
		t.Errorf("planned layers in the image = %s, want %s", got, want)
	}

	// The OCI layout holds the same image.
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("reading the oci layout: %v", err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != r.Digest {
		t.Errorf("oci layout index = %+v (%v), want one manifest %s", im, err, r.Digest)
	}

	// The image config: init entrypoint, venv on PATH, labels.
	ref, _ := name.NewDigest(r.Ref)
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cf.Config.Entrypoint, " "); got != initconfig.InitPath {
		t.Errorf("entrypoint = %q, want %q", got, initconfig.InitPath)
	}
	if cf.Config.Labels[LabelLockDigest] != l.Digest || cf.Config.Labels["org.opencontainers.image.title"] != "imagectl demo" {
		t.Errorf("labels = %v, want the lock digest %s and the lock's title", cf.Config.Labels, l.Digest)
	}
	if !strings.Contains(strings.Join(cf.Config.Env, " "), "PATH="+initconfig.VenvPath+"/bin:") {
		t.Errorf("env = %v, want the venv first on PATH", cf.Config.Env)
	}
	if cf.Created.Unix() != l.SourceDateEpoch {
		t.Errorf("created = %v, want SOURCE_DATE_EPOCH %d", cf.Created, l.SourceDateEpoch)
	}

	// Run something inside it, through its entrypoint (the init): the locked
	// versions are what is installed.
	out := e.runIn(t, dir, `set -e
if [ -x /opt/venv/bin/pip ]; then /opt/venv/bin/pip list --format json > /out/pip.json
else python3 -m pip --python /opt/venv/bin/python list --format json > /out/pip.json; fi
dpkg-query -W -f '${Package}=${Version}\n' > /out/dpkg.txt
cp `+initconfig.Path+` /out/runtime.json
/opt/venv/bin/python -c 'import demo_core, demo_util; print("ok")' > /out/import.txt
test "$(readlink /proc/1/exe)" = `+initconfig.InitPath+` && echo ok > /out/init.txt`)
	var pkgs []struct{ Name, Version string }
	if err := json.Unmarshal([]byte(out["pip.json"]), &pkgs); err != nil {
		t.Fatalf("pip list: %v\n%s", err, out["pip.json"])
	}
	installed := map[string]string{}
	for _, p := range pkgs {
		installed[strings.ToLower(p.Name)] = p.Version
	}
	for _, w := range l.Pip {
		if installed[w.Name] != w.Version {
			t.Errorf("pip: %s is %q in the image, lock has %s", w.Name, installed[w.Name], w.Version)
		}
	}
	for _, d := range l.Apt {
		if !strings.Contains(out["dpkg.txt"], "\n"+d.Name+"="+d.Version+"\n") && !strings.HasPrefix(out["dpkg.txt"], d.Name+"="+d.Version+"\n") {
			t.Errorf("dpkg: %s=%s is not installed in the image", d.Name, d.Version)
		}
	}
	var rc initconfig.Config
	if err := json.Unmarshal([]byte(out["runtime.json"]), &rc); err != nil || rc.Image.LockDigest != l.Digest {
		t.Errorf("runtime config in the image = %+v (%v), want lock digest %s", rc, err, l.Digest)
	}
	if strings.TrimSpace(out["import.txt"]) != "ok" {
		t.Errorf("importing the locked packages printed %q, want ok", out["import.txt"])
	}
	if strings.TrimSpace(out["init.txt"]) != "ok" {
		t.Errorf("PID 1 is not %s; output:\n%s", initconfig.InitPath, out["output"])
	}
}

func TestE2ETwoCleanBuildsSameDigest(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	l := e.lock(t, uniq("repro"), "1.0.0", smallCore)
	// IMAGECTL_TEST_REWRITE=true runs it with BuildKit's rewrite-timestamp
	// on as well; by default the steps' own mtime clamping must suffice.
	rewrite := os.Getenv("IMAGECTL_TEST_REWRITE") == "true"
	t.Logf("exporter rewrite-timestamp: %v", rewrite)
	var digests []string
	for i := range 2 {
		prune(t, e.c)
		start := time.Now()
		r, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true), WithRewriteTimestamp(rewrite))
		if err != nil {
			t.Fatalf("build %d: %v", i+1, err)
		}
		t.Logf("clean build %d: %s", i+1, r.Digest)
		digests = append(digests, r.Digest)
		checkNoBuildTimes(t, r, start)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds from empty caches: %s != %s", digests[0], digests[1])
	}
}

// checkNoBuildTimes reads every layer imagectl made in the pushed image r
// and fails on an entry dated at or after start, when the build began: the
// steps clamp what they create or touch to SOURCE_DATE_EPOCH (files from a
// deb or a wheel keep the archive's own mtime), so no layer depends on when
// it was built.
func checkNoBuildTimes(t *testing.T, r *Result, start time.Time) {
	t.Helper()
	ref, err := name.NewDigest(r.Ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	since := start.Add(-2 * time.Second).Truncate(time.Second)
	for i, li := range r.Layers {
		if li.Name == "base" {
			continue
		}
		rc, err := layers[i].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("layer %s: %v", li.Name, err)
			}
			if !h.ModTime.Before(since) {
				t.Errorf("layer %s: %s has mtime %s, the time of the build (started %s): not clamped", li.Name, h.Name, h.ModTime.UTC(), start.UTC())
			}
		}
		rc.Close()
	}
}

func prune(t testing.TB, c *client.Client) {
	t.Helper()
	ch := make(chan client.UsageInfo)
	done := make(chan int64)
	go func() {
		var n int64
		for u := range ch {
			n += u.Size
		}
		done <- n
	}()
	err := c.Prune(context.Background(), ch, client.PruneAll)
	close(ch)
	n := <-done
	if err != nil {
		t.Fatalf("pruning the buildkitd cache: %v", err)
	}
	t.Logf("pruned %d bytes of build cache", n)
}

func TestE2ETamperedHashFailsAndPushesNothing(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	repo := uniq("tampered")
	l := e.lock(t, repo, "1.0.0", smallCore)
	var real string
	for i, w := range l.Pip {
		if w.Name == "demo-util" {
			real = w.SHA256
			l.Pip[i].SHA256 = sum("not demo-util")
		}
	}
	_, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true), WithTag("candidate"))
	var ce *ChecksumError
	if !errors.As(err, &ce) {
		t.Fatalf("Solve(tampered) = %v, want a *ChecksumError", err)
	}
	t.Logf("error: %v", err)
	// The daemon's own error: gRPC code Unknown, the failing vertex as the
	// only typed detail, the digests only in its text (errors.go). If
	// BuildKit starts sending a typed checksum error, this says so.
	if code := grpcerrors.Code(ce.Err); code != codes.Unknown {
		t.Errorf("BuildKit's checksum failure has gRPC code %v, want Unknown (a typed status: map it in errors.go instead of the text)", code)
	}
	var ve *errdefs.VertexError
	if !errors.As(ce.Err, &ve) {
		t.Errorf("BuildKit's checksum failure carries no VertexError: %v", ce.Err)
	}
	form := -1
	for i, re := range mismatchREs {
		if m := re.FindStringSubmatch(ce.Err.Error()); m != nil && m[1] == "sha256:"+real && strings.Contains(m[0], sum("not demo-util")) {
			form = i
		}
	}
	if form < 0 {
		t.Errorf("BuildKit's message %q matches none of the forms errors.go reads with both digests", ce.Err)
	}
	t.Logf("BuildKit's message (form %d of errors.go): %v", form+1, ce.Err)
	if ce.Artifact.Name != "demo-util" || ce.Want != "sha256:"+sum("not demo-util") || ce.Got != "sha256:"+real {
		t.Errorf("ChecksumError = {%v want %s got %s}, want demo-util with the lock's and the served hash", ce.Artifact, ce.Want, ce.Got)
	}
	tag, _ := name.NewTag(l.Repos.Staging + ":candidate")
	_, err = remote.Head(tag)
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode != http.StatusNotFound {
		t.Errorf("HEAD %s after a failed build = %v, want 404", tag, err)
	}
	tags, err := remote.List(tag.Context())
	if len(tags) != 0 {
		t.Errorf("tags in %s after a failed build = %v (%v), want none", tag.Context(), tags, err)
	}
}

func TestE2EPeripheryChangeKeepsBigLayers(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	repo := uniq("periphery")
	v1, err := Solve(ctx, e.c, e.lock(t, repo, "1.0.0", smallCore), WithInit(e.init), WithPush(true))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Solve(ctx, e.c, e.lock(t, repo, "1.1.0", smallCore), WithInit(e.init), WithPush(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(v1.Layers) != len(v2.Layers) {
		t.Fatalf("layer count %d -> %d", len(v1.Layers), len(v2.Layers))
	}
	for i := range v1.Layers {
		a, b := v1.Layers[i], v2.Layers[i]
		same := a.Digest == b.Digest
		switch a.Name {
		case "periphery", "runtime":
			if a.Name == "periphery" && same {
				t.Errorf("periphery layer unchanged after demo-util 1.0.0 -> 1.1.0")
			}
		default:
			if !same {
				t.Errorf("layer %d (%s) changed after a periphery-only update: %s -> %s", i, a.Name, a.Digest, b.Digest)
			}
		}
	}
	changed, total := changedBytes(v1, v2)
	t.Logf("periphery-only update: %d of %d bytes in changed layers (%.2f%%)", changed, total, 100*float64(changed)/float64(total))
}

// changedBytes is the size of the layers of b that a holds no layer of.
func changedBytes(a, b *Result) (changed, total int64) {
	have := map[string]bool{}
	for _, l := range a.Layers {
		have[l.Digest] = true
	}
	for _, l := range b.Layers {
		total += l.Size
		if !have[l.Digest] {
			changed += l.Size
		}
	}
	return changed, total
}

func TestE2EUnavailable(t *testing.T) {
	e := getE2E(t)
	start := time.Now()
	_, err := Dial(context.Background(), "unix:///nonexistent/buildkitd.sock", 3*time.Second)
	if exitcode.Code(err) != exitcode.Unavailable || !strings.Contains(err.Error(), "/nonexistent/buildkitd.sock") {
		t.Errorf("Dial(nonexistent) = %v, want exit %d naming the socket", err, exitcode.Unavailable)
	}
	// Bounds well above the 3 s timeouts and well below waiting without
	// one (a dead registry's TCP retries take minutes): a loaded machine
	// must not fail them.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Dial(nonexistent) took %v, want within its 3s timeout", d)
	}
	l := e.lock(t, uniq("unavailable"), "1.0.0", smallCore)
	l.Repos.Staging = "127.0.0.1:1/imagectl/staging/unavailable"
	start = time.Now()
	_, err = Solve(context.Background(), e.c, l, WithInit(e.init), WithPush(true), WithDialTimeout(3*time.Second))
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Addr != "127.0.0.1:1" {
		t.Errorf("Solve(push to a dead registry) = %v, want an UnavailableError for 127.0.0.1:1", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Solve(push to a dead registry) took %v, want its pre-flight within the 3s timeouts", d)
	}
}
