package runtime

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkPrepare is the init's own work before the command starts
// (Prepare and WriteFingerprint), with
// storage ready and every step configured (swappiness already at the asked
// value, so the host is never changed).
func BenchmarkPrepare(b *testing.B) {
	dir := b.TempDir()
	storage := filepath.Join(dir, "storage")
	proc := b.TempDir()
	fakeMounts(b, proc, storage)
	sixty := 60
	write(b, filepath.Join(proc, "sys/vm/swappiness"), "60\n")
	cfg := Config{
		Storage:         Storage{Path: storage, Timeout: Duration(time.Second), Required: true},
		Swappiness:      &sixty,
		MinShmBytes:     1 << 20,
		ShmPath:         dir,
		TmpDir:          filepath.Join(storage, "tmp"),
		Caches:          Caches{Inductor: filepath.Join(storage, "inductor"), Triton: filepath.Join(storage, "triton"), HF: filepath.Join(storage, "hf"), CUDA: filepath.Join(storage, "cuda")},
		DriverFloor:     "525.60.13",
		FingerprintPath: filepath.Join(storage, "fingerprint.json"),
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=/root"}
	b.ResetTimer()
	for b.Loop() {
		p, err := Prepare(context.Background(), cfg, env, WithProcRoot(proc), WithTmpRoot(dir))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := p.WriteFingerprint(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
