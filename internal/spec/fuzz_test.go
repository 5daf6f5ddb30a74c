package spec_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"imagectl/internal/spec"
)

// FuzzLoadSource feeds arbitrary bytes to the decoder: it must never panic,
// and every failure must be a *DiagnosticsError that renders.
func FuzzLoadSource(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/bad/*.hcl")
	seeds = append(seeds, "../../specs/demo.hcl", "../../specs/pytorch.hcl")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		var imgs []spec.Image
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			imgs, err = spec.LoadSource(context.Background(), "fuzz.hcl", src, spec.WithEnv(func(string) (string, bool) { return "", false }))
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("LoadSource() ran for more than 5s on %q", src)
		}
		if err == nil {
			for _, img := range imgs {
				if img.Name == "" || img.Base == "" || img.Python == "" {
					t.Fatalf("LoadSource() = image %+v without a name, base or python", img)
				}
			}
			return
		}
		var de *spec.DiagnosticsError
		if !errors.As(err, &de) {
			t.Fatalf("LoadSource() = %T %v, want a *DiagnosticsError", err, err)
		}
		var buf bytes.Buffer
		if err := de.WriteText(&buf, 80, false); err != nil {
			t.Fatalf("WriteText: %v", err)
		}
		_ = de.Error()
		_ = de.List()
	})
}
