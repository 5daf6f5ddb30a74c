package resolve

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/lock"
	"imagectl/internal/spec"
)

// A single-platform image keeps the inputs digest it had before specs
// had platforms; any other platform list changes it.
func TestInputsDigestPlatforms(t *testing.T) {
	img := spec.Image{Name: "demo", Base: "registry.example/b:1", Python: "3.11"}
	before, err := InputsDigest(img)
	if err != nil {
		t.Fatal(err)
	}
	img.Platforms = []string{"linux/amd64"}
	if got, _ := InputsDigest(img); got != before {
		t.Errorf("InputsDigest(platforms [linux/amd64]) = %s, want %s (as without platforms)", got, before)
	}
	img.Platforms = []string{"linux/amd64", "linux/arm64"}
	if got, _ := InputsDigest(img); got == before {
		t.Errorf("InputsDigest(platforms [linux/amd64 linux/arm64]) = %s, the single-platform digest", got)
	}
}

// pushMultiBase pushes an index of one random image per platform to the
// fixture's base tag and returns each platform's manifest digest.
func (f *fixture) pushMultiBase(t *testing.T, archs ...string) map[string]string {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, "application/vnd.oci.image.index.v1+json")
	digests := map[string]string{}
	for _, a := range archs {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", a
		img, _ = mutate.ConfigFile(img, cf)
		d, _ := img.Digest()
		digests["linux/"+a] = d.String()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	ref, _ := name.ParseReference(f.base)
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	return digests
}

// A two-platform image resolves each platform inside that platform's base
// (its manifest in the base index), as that platform, into one lock whose
// first platform sits where a single-platform lock has it.
func TestResolvePlatforms(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	digests := f.pushMultiBase(t, "amd64", "arm64")
	img := f.demo()
	img.Platforms = []string{"linux/amd64", "linux/arm64"}
	l, err := Image(ctx, img, f.opts()...)
	if err != nil {
		t.Fatalf("Image(demo, amd64+arm64) = %v", err)
	}
	if d := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, l.PlatformNames()); d != "" {
		t.Fatalf("PlatformNames (-want +got):\n%s", d)
	}
	if l.Base.ManifestDigest != digests["linux/amd64"] || len(l.Platforms) != 1 || l.Platforms[0].Base.ManifestDigest != digests["linux/arm64"] || l.Platforms[0].Base.Platform != "linux/arm64" {
		t.Errorf("bases: amd64 %s, platforms %+v; want the index's manifests %v", l.Base.ManifestDigest, l.Platforms, digests)
	}
	if l.Platforms[0].Base.IndexDigest != l.Base.IndexDigest {
		t.Errorf("index digests differ: %s, %s", l.Base.IndexDigest, l.Platforms[0].Base.IndexDigest)
	}
	for _, d := range l.Platforms[0].Apt {
		if d.Arch != "arm64" || !strings.HasSuffix(d.URL, "_arm64.deb") {
			t.Errorf("arm64 resolution has deb %+v, want the arm64 build", d)
		}
	}
	for _, d := range l.Apt {
		if d.Arch != "amd64" {
			t.Errorf("amd64 resolution has deb %+v", d)
		}
	}
	// Every job ran as its platform, on that platform's base by digest.
	repo := strings.Split(f.base, ":bookworm")[0]
	seen := map[string]int{}
	for _, j := range f.runner.jobs {
		seen[j.Platform]++
		if want := repo + "@" + digests[j.Platform]; j.Image != want {
			t.Errorf("job %q as %s ran on %s, want %s", j.Name, j.Platform, j.Image, want)
		}
	}
	if seen["linux/amd64"] == 0 || seen["linux/arm64"] == 0 || len(seen) != 2 {
		t.Errorf("jobs per platform = %v, want both platforms", seen)
	}

	b, err := lock.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	back, err := lock.Parse("lock.json", b)
	if err != nil {
		t.Fatalf("Parse(Marshal(two-platform lock)) = %v", err)
	}
	if d := cmp.Diff(l, back); d != "" {
		t.Errorf("Parse(Marshal) mismatch (-want +got):\n%s", d)
	}
	f.runner.jobs = nil
	l2, err := Image(ctx, img, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := lock.Marshal(l2); !bytes.Equal(b, b2) {
		t.Errorf("re-locking two platforms is not byte-identical:\n%s", cmp.Diff(string(b), string(b2)))
	}

	arm, err := l.ForPlatform("linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	if arm.Base.Platform != "linux/arm64" || arm.Platforms != nil || arm.Apt[0].Arch != "arm64" || arm.Digest != l.Digest {
		t.Errorf("ForPlatform(linux/arm64) = base %+v, %d platforms, apt %+v, digest %s", arm.Base, len(arm.Platforms), arm.Apt, arm.Digest)
	}
	if _, err := l.ForPlatform("linux/s390x"); err == nil || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
		t.Errorf("ForPlatform(linux/s390x) = %v, want an error naming the lock's platforms", err)
	}

	// --check: the lock is current; one platform fewer in the spec makes it stale.
	if err := Check(ctx, img, l, WithCatalog(fakeCatalog{})); err != nil {
		t.Errorf("Check(two-platform lock) = %v", err)
	}
	one := img
	one.Platforms = []string{"linux/amd64"}
	if err := Check(ctx, one, l, WithCatalog(fakeCatalog{})); err == nil {
		t.Errorf("Check(spec amd64 only, lock amd64+arm64) = nil, want stale")
	}

	// --upgrade re-resolves each platform in its own base, holding its own
	// frozen wheels and, with no apt package named, its own debs.
	f.runner.jobs = nil
	up, err := Upgrade(ctx, img, l, f.opts(WithPackages("demo-util"))...)
	if err != nil {
		t.Fatalf("Upgrade(two platforms) = %v", err)
	}
	if d := cmp.Diff(l.Platforms[0].Apt, up.Platforms[0].Apt); d != "" || up.Platforms[0].Base != l.Platforms[0].Base {
		t.Errorf("upgrade moved the arm64 base or debs (-old +new):\n%s", d)
	}
	if _, ok := f.runner.job("apt resolve"); ok {
		t.Errorf("upgrade of a wheel ran the apt step")
	}
	armPip := 0
	for _, j := range f.runner.jobs {
		if j.Name == "pip resolve" && j.Platform == "linux/arm64" {
			armPip++
			if !strings.Contains(string(j.Files["constraints.txt"]), "demo-core==1.0.0") {
				t.Errorf("arm64 upgrade constraints = %q, want the frozen demo-core held", j.Files["constraints.txt"])
			}
		}
	}
	if armPip != 1 {
		t.Errorf("upgrade ran %d arm64 pip steps, want 1", armPip)
	}
	// A platform the lock does not have cannot be added by --upgrade.
	three := img
	three.Platforms = []string{"linux/arm64"}
	l1, err := Image(ctx, three, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Upgrade(ctx, img, l1, f.opts()...); err == nil || !strings.Contains(err.Error(), "adds platform linux/amd64") {
		t.Errorf("Upgrade(spec amd64+arm64, lock arm64) = %v, want an error that the spec adds linux/amd64", err)
	}
}

// WithPlatformRunner sends every job of linux/arm64 (apt, pip, on resolve
// and on upgrade) to that platform's builder and none of the others'; the
// lock is byte-identical to the one-builder lock.
func TestPlatformBuilderRoutesJobs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.pushMultiBase(t, "amd64", "arm64")
	img := f.demo()
	img.Platforms = []string{"linux/amd64", "linux/arm64"}
	one, err := Image(ctx, img, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	f.runner.jobs = nil
	arm := &fakeRunner{apt: f.runner.apt, wheels: f.runner.wheels, fileURL: f.runner.fileURL}
	split, err := Image(ctx, img, f.opts(WithPlatformRunner("linux/arm64", arm))...)
	if err != nil {
		t.Fatalf("Image(arm64 on its own builder) = %v", err)
	}
	platformsOf := func(jobs []Job) map[string]int {
		m := map[string]int{}
		for _, j := range jobs {
			m[j.Platform]++
		}
		return m
	}
	def, got := platformsOf(f.runner.jobs), platformsOf(arm.jobs)
	if def["linux/amd64"] == 0 || len(def) != 1 || got["linux/arm64"] == 0 || len(got) != 1 {
		t.Errorf("jobs: default builder %v, arm64 builder %v; want amd64 only on the default, arm64 only on its own", def, got)
	}
	a, _ := lock.Marshal(one)
	b, _ := lock.Marshal(split)
	if !bytes.Equal(a, b) {
		t.Errorf("split lock differs from the one-builder lock:\n%s", cmp.Diff(string(a), string(b)))
	}

	f.runner.jobs, arm.jobs = nil, nil
	if _, err := Upgrade(ctx, img, split, f.opts(WithPlatformRunner("linux/arm64", arm), WithPackages("demo-util"))...); err != nil {
		t.Fatalf("Upgrade(arm64 on its own builder) = %v", err)
	}
	if def, got := platformsOf(f.runner.jobs), platformsOf(arm.jobs); def["linux/arm64"] != 0 || got["linux/arm64"] == 0 || len(got) != 1 {
		t.Errorf("upgrade jobs: default builder %v, arm64 builder %v", def, got)
	}
}

// A builder for a platform that no image has is an error naming it and
// the platforms the images have; a malformed platform is refused.
func TestCheckPlatformBuilders(t *testing.T) {
	amd := spec.Image{Name: "a"}
	both := spec.Image{Name: "b", Platforms: []string{"linux/arm64", "linux/amd64"}}
	arm := WithPlatformBuildkit("linux/arm64", "tcp://arm:1234")
	if err := CheckPlatformBuilders([]spec.Image{amd, both}, arm); err != nil {
		t.Errorf("CheckPlatformBuilders(amd64 and amd64+arm64 images) = %v", err)
	}
	err := CheckPlatformBuilders([]spec.Image{amd}, arm)
	if err == nil || !strings.Contains(err.Error(), "no image to lock has platform linux/arm64 (they have linux/amd64)") {
		t.Errorf("CheckPlatformBuilders(amd64 image, arm64 builder) = %v", err)
	}
	if err := LockAll(context.Background(), t.TempDir(), []spec.Image{amd}, WithRunner(&fakeRunner{}), arm); err == nil || !strings.Contains(err.Error(), "linux/arm64") {
		t.Errorf("LockAll(amd64 image, arm64 builder) = %v, want the builder refused", err)
	}
	for _, p := range []string{"arm64", "linux/"} {
		if err := CheckPlatformBuilders(nil, WithPlatformBuildkit(p, "tcp://x:1")); err == nil || !strings.Contains(err.Error(), "OS/ARCH") {
			t.Errorf("WithPlatformBuildkit(%q) = %v, want a platform error", p, err)
		}
	}
	if err := CheckPlatformBuilders(nil, WithPlatformBuildkit("linux/arm64", "")); err == nil {
		t.Error("WithPlatformBuildkit(linux/arm64, \"\") = nil, want an error")
	}
	o, err := makeOptions([]Option{WithBuildkit("unix:///a.sock"), arm})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := o.runnerFor("linux/arm64").(*buildkitRunner); !ok || r.addr != "tcp://arm:1234" {
		t.Errorf("runnerFor(linux/arm64) = %#v, want the arm64 buildkitd", o.runnerFor("linux/arm64"))
	}
	if r, ok := o.runnerFor("linux/amd64").(*buildkitRunner); !ok || r.addr != "unix:///a.sock" {
		t.Errorf("runnerFor(linux/amd64) = %#v, want WithBuildkit's", o.runnerFor("linux/amd64"))
	}
}

// A builder option names its platform by ParsePlatformName's rule.
func TestBuilderOptionPlatform(t *testing.T) {
	for _, opt := range []Option{WithPlatformBuildkit("linux", "tcp://arm:1234"), WithPlatformRunner("linux/", &fakeRunner{})} {
		if _, err := makeOptions([]Option{opt}); err == nil || !strings.HasPrefix(err.Error(), "builder platform ") {
			t.Errorf("an option's bad platform: error %v, want builder platform ...", err)
		}
	}
}
