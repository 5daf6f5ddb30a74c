package lock

import (
	"context"
	"errors"
	"testing"

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

// Resolve refuses a platform it cannot lock instead of writing an amd64 lock.
func TestResolveRefusesUnsupportedPlatform(t *testing.T) {
	img := spec.Image{Name: "demo", Base: "registry.example/b:1", Python: "3.11", Platforms: []string{"linux/amd64", "linux/arm64"}}
	_, err := Resolve(context.Background(), img, WithBuildkit("tcp://127.0.0.1:1")) // refused before any solve
	var pe *UnsupportedPlatformError
	if !errors.As(err, &pe) || pe.Platform != "linux/arm64" || pe.Image != "demo" {
		t.Fatalf("Resolve(platforms amd64+arm64) = %v, want an *UnsupportedPlatformError for linux/arm64", err)
	}
}
