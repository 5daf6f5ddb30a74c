package spec_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"imagectl/internal/spec"
)

func noEnv(string) (string, bool) { return "", false }

// The shipped specs load cleanly and produce the images the platform needs.
func TestShippedSpecs(t *testing.T) {
	imgs, err := spec.Load(context.Background(), []string{"../../specs"}, spec.WithEnv(noEnv))
	if err != nil {
		var de *spec.DiagnosticsError
		if errors.As(err, &de) {
			de.WriteText(os.Stderr, 100, false)
		}
		t.Fatalf("Load(specs) = %v", err)
	}
	got := map[string]spec.Image{}
	for _, img := range imgs {
		got[img.Name] = img
	}
	for _, tc := range []struct {
		name, base, variant, nccl, cudnn, floor string
	}{
		{"pytorch-2.6-cu118-py3.10", "docker.io/nvidia/cuda:11.8.0-base-ubuntu22.04", "cu118", "2.21.5", "9.1.0.70", "525.60.13"},
		{"pytorch-2.6-cu118-py3.11", "docker.io/nvidia/cuda:11.8.0-base-ubuntu22.04", "cu118", "2.21.5", "9.1.0.70", "525.60.13"},
		{"pytorch-2.6-cu121-py3.10", "docker.io/nvidia/cuda:12.1.1-base-ubuntu22.04", "cu124", "2.21.5", "9.1.0.70", "525.60.13"},
		{"pytorch-2.6-cu121-py3.11", "docker.io/nvidia/cuda:12.1.1-base-ubuntu22.04", "cu124", "2.21.5", "9.1.0.70", "525.60.13"},
	} {
		img, ok := got[tc.name]
		if !ok {
			t.Errorf("Load(specs) has no image %q; got %d images", tc.name, len(imgs))
			continue
		}
		if img.Base != tc.base || img.TorchVariant != tc.variant || img.NCCL != tc.nccl || img.CUDNN != tc.cudnn || img.DriverFloor != tc.floor || img.Torch != "2.6.0" {
			t.Errorf("%s: base %q variant %q nccl %q cudnn %q floor %q torch %q, want %q %q %q %q %q 2.6.0",
				tc.name, img.Base, img.TorchVariant, img.NCCL, img.CUDNN, img.DriverFloor, img.Torch, tc.base, tc.variant, tc.nccl, tc.cudnn, tc.floor)
		}
	}
	if _, ok := got["demo"]; !ok {
		t.Errorf("Load(specs) has no demo image")
	}
	if len(imgs) != 5 {
		t.Errorf("Load(specs) = %d images, want 5", len(imgs))
	}
}
