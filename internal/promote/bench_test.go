package promote_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/testenv"
)

// BenchmarkPromote promotes one image per iteration within the real
// registry (make up) and reports the blob bytes uploaded (target 0: every
// blob is mounted) and the wall time per image (ns/op). The image is
// IMAGECTL_BENCH_PROMOTE_MB (default 64) MiB in 4 layers; pushing, signing
// and attesting it are outside the timer.
func BenchmarkPromote(b *testing.B) {
	env := testenv.Get(b)
	mb := int64(64)
	if s := os.Getenv("IMAGECTL_BENCH_PROMOTE_MB"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			b.Fatalf("IMAGECTL_BENCH_PROMOTE_MB=%q: want a positive integer", s)
		}
		mb = n
	}
	f, proxy := e2eFixture(b, env)
	const layers = 4
	var uploaded, mounted int64
	path := ""
	b.SetBytes(mb << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d := f.pushBig((mb<<20)/layers, layers)
		f.sign(d, f.signer)
		f.attestLock(d, f.lock, f.signer)
		f.attestBuild(d, f.signer)
		f.attestVerification(d, f.passing(d), f.ver)
		if path == "" {
			path = f.releaseFile(nil)
		}
		if err := releasefile.Record(path, f.lock.Name, f.release, releasefile.Release{Source: d.String(), Month: "2026-12", Tags: []string{fmt.Sprintf("bench-%d", i)}}, "latest"); err != nil {
			b.Fatal(err)
		}
		proxy.reset()
		b.StartTimer()
		res, err := promote.Run(f.ctx, path, f.opts(promote.WithConfirm(true))...)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Actions) == 0 {
			b.Fatal("nothing promoted")
		}
		uploaded += proxy.uploaded.Load()
		mounted += proxy.mounted.Load()
	}
	b.ReportMetric(float64(uploaded)/float64(b.N), "uploaded-B/op")
	b.ReportMetric(float64(mounted)/float64(b.N), "mounted-blobs/op")
	if uploaded != 0 {
		b.Errorf("%d blob bytes uploaded over %d promotions, want 0", uploaded, b.N)
	}
}
