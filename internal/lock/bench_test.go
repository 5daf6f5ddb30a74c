package lock

import (
	"context"
	"path/filepath"
	"testing"

	"imagectl/internal/compat"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
)

// BenchmarkCheckShipped measures `imagectl lock check` on the shipped
// specs, minus process start: load specs/, read and parse every image's
// lock, check it. The locks are made from the specs (their resolved parts
// do not change what Check does). Target: < 100 ms per run.
func BenchmarkCheckShipped(b *testing.B) {
	ctx := context.Background()
	specs := filepath.Join(testenv.Root(), "specs")
	imgs, err := spec.Load(ctx, []string{specs})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for _, img := range imgs {
		d, err := InputsDigest(img)
		if err != nil {
			b.Fatal(err)
		}
		l := sampleLock()
		l.Name, l.Spec.InputsDigest, l.CatalogDigest = img.Name, d, compat.Digest()
		if err := Write(Path(dir, img.Name), l); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(imgs)), "images")
	b.ResetTimer()
	for b.Loop() {
		imgs, err := spec.Load(ctx, []string{specs})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := CheckAll(ctx, dir, imgs); err != nil {
			b.Fatal(err)
		}
	}
}
