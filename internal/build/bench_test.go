package build

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/moby/buildkit/client/llb"

	"imagectl/internal/lock"
	"imagectl/internal/wheelhouse"
)

// benchRounds is how many timed no-op rebuilds each side gets (interleaved;
// IMAGECTL_BENCH_ROUNDS overrides it: on a loaded machine more rounds give
// steadier medians); the medians are compared.
var benchRounds = 5

// BenchmarkBuildNoopVsBuildctl times a no-op rebuild of the demo image
// (everything cached, pushed by digest again) through imagectl against
// buildctl solving and pushing the same definition with the same exporter
// options (push by digest, the lock's source-date-epoch), both as
// processes, and through the library. It reports the ratios of the medians,
// and, for scale, buildctl and imagectl with rewrite-timestamp on (unless
// IMAGECTL_BENCH_REWRITE=0: those rounds take tens of seconds).
func BenchmarkBuildNoopVsBuildctl(b *testing.B) {
	e := getE2E(b)
	ctx := context.Background()
	dir := b.TempDir()
	l := e.lock(b, uniq("bench-noop"), "1.0.0", smallCore)
	lockPath := filepath.Join(dir, "lock.json")
	if err := lock.Write(lockPath, l); err != nil {
		b.Fatal(err)
	}
	imagectl := filepath.Join(dir, "imagectl")
	if out, err := exec.Command("go", "build", "-o", imagectl, "imagectl/cmd/imagectl").CombinedOutput(); err != nil {
		b.Fatalf("building imagectl: %v\n%s", err, out)
	}
	def, err := Definition(ctx, l, WithInit(e.init))
	if err != nil {
		b.Fatal(err)
	}
	var defBuf bytes.Buffer
	if err := llb.WriteTo(def, &defBuf); err != nil {
		b.Fatal(err)
	}
	defPath := filepath.Join(dir, "demo.llb")
	if err := os.WriteFile(defPath, defBuf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	// Warm the cache once through each path.
	if _, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true)); err != nil {
		b.Fatal(err)
	}
	same := "type=image,name=" + l.Repos.Staging + fmt.Sprintf(",push=true,push-by-digest=true,oci-mediatypes=true,source-date-epoch=%d", l.SourceDateEpoch)
	rewrite := same + ",rewrite-timestamp=true"
	buildctlWith := func(output string) time.Duration {
		cmd := exec.Command(filepath.Join(e.env.Bin, "buildctl"), "--addr", e.env.BuildkitHost, "build", "--progress", "quiet",
			"--output", output)
		in, _ := os.Open(defPath)
		defer in.Close()
		cmd.Stdin = in
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("buildctl build: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	buildctl := func() time.Duration { return buildctlWith(same) }
	cliWith := func(extra ...string) time.Duration {
		cmd := exec.Command(imagectl, append([]string{"build", "--lock", lockPath, "--push", "--progress", "quiet", "--init", e.init, "--addr", e.env.BuildkitHost}, extra...)...)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("imagectl build: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	cli := func() time.Duration { return cliWith() }
	lib := func() time.Duration {
		start := time.Now()
		if _, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	buildctl()
	cli()
	withRewrite := os.Getenv("IMAGECTL_BENCH_REWRITE") != "0"
	if v := os.Getenv("IMAGECTL_BENCH_ROUNDS"); v != "" {
		if _, err := fmt.Sscan(v, &benchRounds); err != nil || benchRounds < 1 {
			b.Fatalf("IMAGECTL_BENCH_ROUNDS=%q: want a positive number of rounds", v)
		}
	}
	for b.Loop() {
		var tb, tc, tl, tr, tcr []time.Duration
		for range benchRounds {
			if withRewrite {
				tr = append(tr, buildctlWith(rewrite))
				tcr = append(tcr, cliWith("--rewrite-timestamp"))
			}
			tb = append(tb, buildctl())
			tc = append(tc, cli())
			tl = append(tl, lib())
		}
		mb, mc, ml := median(tb), median(tc), median(tl)
		b.ReportMetric(float64(mc)/float64(mb), "cli/buildctl")
		b.ReportMetric(float64(ml)/float64(mb), "lib/buildctl")
		fmt.Printf("no-op rebuild, median of %d: buildctl (same exporter options) %v, imagectl build %v (%.2fx), build.Solve %v (%.2fx); target <= 1.10x\n",
			benchRounds, mb.Round(time.Millisecond), mc.Round(time.Millisecond), float64(mc)/float64(mb), ml.Round(time.Millisecond), float64(ml)/float64(mb))
		fmt.Printf("  every round (ms), buildctl / imagectl build / build.Solve: %v / %v / %v\n", millis(tb), millis(tc), millis(tl))
		if withRewrite {
			mr, mcr := median(tr), median(tcr)
			b.ReportMetric(float64(mcr)/float64(mr), "cli/buildctl-rewrite")
			fmt.Printf("  both with rewrite-timestamp=true: buildctl %v, imagectl build --rewrite-timestamp %v (%.2fx)\n",
				mr.Round(time.Millisecond), mcr.Round(time.Millisecond), float64(mcr)/float64(mr))
		}
	}
}

func millis(d []time.Duration) []int64 {
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = v.Milliseconds()
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkBuildPeripheryUpdate builds the demo with a big frozen wheel
// (IMAGECTL_BENCH_CORE_MB, default 300 MB of incompressible payload), then
// again with only demo-util moved, and reports the bytes in layers the
// update changed over the image's bytes.
func BenchmarkBuildPeripheryUpdate(b *testing.B) {
	e := getE2E(b)
	ctx := context.Background()
	mb := int64(300)
	if v := os.Getenv("IMAGECTL_BENCH_CORE_MB"); v != "" {
		fmt.Sscan(v, &mb)
	}
	core := wheelhouse.Spec{Name: "demo-core", Version: "2.0.0", PayloadBytes: mb << 20}
	repo := uniq("bench-periphery")
	v1Lock := e.lock(b, repo, "1.0.0", core)
	v2Lock := e.lock(b, repo, "1.1.0", core)
	for b.Loop() {
		start := time.Now()
		v1, err := Solve(ctx, e.c, v1Lock, WithInit(e.init), WithPush(true))
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Since(start)
		start = time.Now()
		v2, err := Solve(ctx, e.c, v2Lock, WithInit(e.init), WithPush(true))
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Since(start)
		changed, total := changedBytes(v1, v2)
		ratio := float64(changed) / float64(total)
		b.ReportMetric(100*ratio, "%changed")
		fmt.Printf("periphery-only update (demo-util 1.0.0 -> 1.1.0, %d MB frozen demo-core): %d of %d bytes in changed layers = %.3f%% (target < 5%%); v1 build %v, v2 build %v\n",
			mb, changed, total, 100*ratio, t1.Round(time.Millisecond), t2.Round(time.Millisecond))
		for i := range v2.Layers {
			fmt.Printf("  %-16s %12d  %s  %s\n", v2.Layers[i].Name, v2.Layers[i].Size, v2.Layers[i].Digest[:19], map[bool]string{true: "same", false: "changed"}[v1.Layers[i].Digest == v2.Layers[i].Digest])
		}
	}
}
