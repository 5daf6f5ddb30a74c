package resolve

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/compat"
	"imagectl/internal/lock"
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
		l := &lock.Lock{Name: img.Name, Spec: lock.Source{Path: img.File, InputsDigest: d}, CatalogDigest: compat.Digest(), Core: lock.Core{Python: img.Python},
			Base: lock.Base{Ref: img.Base, IndexDigest: "sha256:" + strings.Repeat("3", 64), Platform: "linux/amd64"}}
		if err := lock.Write(lock.Path(dir, img.Name), l); err != nil {
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
