package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"imagectl/internal/lock"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// benchPlatformsCoreMB is demo-core's payload in BenchmarkPlatforms unless
// IMAGECTL_BENCH_PLATFORMS_CORE_MB says otherwise: every byte of it is
// installed by pip under QEMU in the arm64 builds.
const benchPlatformsCoreMB = 64

// BenchmarkPlatforms measures the demo (specs/demo.hcl) on the two-platform
// base (IMAGECTL_BASE_MULTI), linux/arm64 running under QEMU user
// emulation, in one run against the real buildkitd and registry, with a
// wheel index of its own holding a demo-core of
// IMAGECTL_BENCH_PLATFORMS_CORE_MB (default 64) MB of incompressible
// payload:
//
//  1. resolve.Image for linux/amd64 alone, linux/arm64 alone and both, each
//     from a pruned build cache: seconds per platform and the arm64/amd64
//     (emulated/native) ratio;
//  2. build.Solve of each of those locks from a pruned build cache, pushed:
//     seconds per platform and the emulated/native ratio;
//  3. demo-util 1.1.0 published, resolve.Upgrade of the two-platform lock (it
//     must move demo-util alone on each platform), a rebuild on the warm
//     cache: per platform, the bytes of the child's layers that the
//     previous build's same-platform child does not hold over the child's
//     layer bytes. Target < 5% on each platform; a miss fails the benchmark.
func BenchmarkPlatforms(b *testing.B) {
	e := getE2E(b)
	base := e.env.MultiBase(b)
	mb := int64(benchPlatformsCoreMB)
	if v := os.Getenv("IMAGECTL_BENCH_PLATFORMS_CORE_MB"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			b.Fatalf("IMAGECTL_BENCH_PLATFORMS_CORE_MB=%q: want a whole number of MB", v)
		}
		mb = n
	}
	const amd, arm = "linux/amd64", "linux/arm64"
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
		fmt.Printf("platforms bench: demo with a %d MB demo-core on %s; %d CPUs, load average at start %s\n", mb, base, runtime.NumCPU(), loadavg())
		ix := testenv.NewWheelIndex(b,
			wheelhouse.Spec{Name: "demo-core", Version: "1.0.0", PayloadBytes: mb << 20},
			wheelhouse.Spec{Name: "demo-dep", Version: "1.0.0"},
			wheelhouse.Spec{Name: "demo-util", Version: "1.0.0", Requires: []string{"demo-dep>=1"}},
		)
		img := benchDemo(b, e.env, ix.URL)
		img.Base = base
		img.Repos.Staging += "-" + uniq("bench-platforms")
		lockOpts := func() []resolve.Option {
			// A fresh index-proxy cache each time: no lock reuses another's.
			return []resolve.Option{resolve.WithBuildkit(e.env.BuildkitHost), resolve.WithRoot(e.env.Root), resolve.WithIndexCache(b.TempDir())}
		}

		// 1. Locks, each from a pruned cache.
		sets := []struct {
			name  string
			plats []string
		}{{"amd64", []string{amd}}, {"arm64", []string{arm}}, {"both", []string{amd, arm}}}
		locks := map[string]*lock.Lock{}
		lockSecs := map[string]float64{}
		for _, s := range sets {
			prune(b, e.c)
			im := img
			im.Platforms = s.plats
			start := time.Now()
			l, err := resolve.Image(ctx, im, lockOpts()...)
			if err != nil {
				b.Fatalf("locking the demo for %s: %v", strings.Join(s.plats, " + "), err)
			}
			lockSecs[s.name] = time.Since(start).Seconds()
			if got := strings.Join(l.PlatformNames(), " "); got != strings.Join(s.plats, " ") {
				b.Fatalf("lock for %s has platforms %s", strings.Join(s.plats, " + "), got)
			}
			locks[s.name] = l
		}
		lockRatio := lockSecs["arm64"] / lockSecs["amd64"]
		b.ReportMetric(lockSecs["amd64"], "lock-amd64-s")
		b.ReportMetric(lockSecs["arm64"], "lock-arm64-s")
		b.ReportMetric(lockSecs["both"], "lock-both-s")
		b.ReportMetric(lockRatio, "lock-arm64/amd64")
		fmt.Printf("lock (pruned cache each): linux/amd64 %.1fs, linux/arm64 %.1fs (emulated/native %.2fx), both %.1fs\n",
			lockSecs["amd64"], lockSecs["arm64"], lockRatio, lockSecs["both"])

		// 2. Builds, each from a pruned cache, pushed.
		builds := map[string]*Result{}
		buildSecs := map[string]float64{}
		for _, s := range sets {
			prune(b, e.c)
			start := time.Now()
			r, err := Solve(ctx, e.c, locks[s.name], WithInit(e.init), WithPush(true))
			if err != nil {
				b.Fatalf("building the demo for %s from a pruned cache: %v", strings.Join(s.plats, " + "), err)
			}
			buildSecs[s.name] = time.Since(start).Seconds()
			builds[s.name] = r
		}
		buildRatio := buildSecs["arm64"] / buildSecs["amd64"]
		b.ReportMetric(buildSecs["amd64"], "build-amd64-s")
		b.ReportMetric(buildSecs["arm64"], "build-arm64-s")
		b.ReportMetric(buildSecs["both"], "build-both-s")
		b.ReportMetric(buildRatio, "build-arm64/amd64")
		fmt.Printf("build (pruned cache each, pushed): linux/amd64 %.1fs (%d bytes), linux/arm64 %.1fs (%d bytes) (emulated/native %.2fx), both %.1fs (index %s)\n",
			buildSecs["amd64"], builds["amd64"].Size, buildSecs["arm64"], builds["arm64"].Size, buildRatio, buildSecs["both"], builds["both"].Digest)

		// 3. Periphery-only update of the two-platform image.
		old := locks["both"]
		ix.Publish(b, wheelhouse.Spec{Name: "demo-util", Version: "1.1.0", Requires: []string{"demo-dep>=1"}})
		im := img
		im.Platforms = []string{amd, arm}
		start := time.Now()
		up, err := resolve.Upgrade(ctx, im, old, lockOpts()...)
		if err != nil {
			b.Fatalf("resolve.Upgrade after demo-util 1.1.0: %v", err)
		}
		upSecs := time.Since(start).Seconds()
		for _, p := range []string{amd, arm} {
			ol, err := old.ForPlatform(p)
			if err != nil {
				b.Fatal(err)
			}
			nl, err := up.ForPlatform(p)
			if err != nil {
				b.Fatal(err)
			}
			d := lock.Diff(ol, nl)
			if len(d.Added) != 0 || len(d.Removed) != 0 || len(d.Changed) != 1 || d.Changed[0].Name != "demo-util" || d.Changed[0].To != "1.1.0" {
				b.Fatalf("%s: the upgrade changed %+v, want demo-util 1.0.0 -> 1.1.0 alone (not a periphery-only update)", p, d)
			}
		}
		start = time.Now()
		next, err := Solve(ctx, e.c, up, WithInit(e.init), WithPush(true))
		if err != nil {
			b.Fatalf("rebuilding the demo after the upgrade: %v", err)
		}
		rebuildSecs := time.Since(start).Seconds()
		prev := builds["both"]
		if len(prev.Platforms) != 2 || len(next.Platforms) != 2 {
			b.Fatalf("two-platform builds gave %d and %d platform images, want 2", len(prev.Platforms), len(next.Platforms))
		}
		fmt.Printf("periphery-only update (demo-util 1.0.0 -> 1.1.0): resolve.Upgrade %.1fs, rebuild on the warm cache %.1fs, index %s -> %s\n",
			upSecs, rebuildSecs, prev.Digest, next.Digest)
		for i, p := range next.Platforms {
			q := prev.Platforms[i]
			if q.Platform != p.Platform {
				b.Fatalf("platform %d: %s before, %s after", i, q.Platform, p.Platform)
			}
			changed, total := changedBytes(&Result{Layers: q.Layers}, &Result{Layers: p.Layers})
			pct := 100 * float64(changed) / float64(total)
			arch := strings.TrimPrefix(p.Platform, "linux/")
			b.ReportMetric(pct, "%changed-"+arch)
			fmt.Printf("  %s: %d of %d bytes in changed layers = %.3f%% (target < 5%%); %s -> %s\n", p.Platform, changed, total, pct, q.Digest, p.Digest)
			have := map[string]bool{}
			for _, l := range q.Layers {
				have[l.Digest] = true
			}
			for _, l := range p.Layers {
				fmt.Printf("    %-16s %12d  %s  %s\n", l.Name, l.Size, l.Digest[:19], map[bool]string{true: "same", false: "changed"}[have[l.Digest]])
			}
			if pct >= 5 {
				b.Errorf("%s: a periphery-only update changed %.3f%% of the image's layer bytes, target < 5%%", p.Platform, pct)
			}
		}
		fmt.Printf("platforms bench: load average at end %s\n", loadavg())
		cancel()
	}
}

// benchDemo loads specs/demo.hcl with the test registry and the wheel
// index at indexURL.
func benchDemo(b *testing.B, env testenv.Env, indexURL string) spec.Image {
	b.Helper()
	imgs, err := spec.Load(context.Background(), []string{filepath.Join(env.Root, "specs", "demo.hcl")},
		spec.WithVars(map[string]string{"registry": env.Registry, "wheel_index": indexURL}))
	if err != nil || len(imgs) != 1 {
		b.Fatalf("loading the demo spec: %d images, %v", len(imgs), err)
	}
	return imgs[0]
}

// loadavg is /proc/loadavg's 1, 5 and 15 minute load averages.
func loadavg() string {
	bs, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	f := strings.Fields(string(bs))
	if len(f) < 3 {
		return strings.TrimSpace(string(bs))
	}
	return strings.Join(f[:3], " ")
}
