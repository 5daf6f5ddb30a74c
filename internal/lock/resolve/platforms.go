package resolve

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"imagectl/internal/compat"
	"imagectl/internal/spec"
)

// imagePlatforms are img's platforms as the lock resolves them: sorted,
// linux/amd64 when the spec names none.
func imagePlatforms(img spec.Image) ([]v1.Platform, error) {
	names := img.Platforms
	if len(names) == 0 {
		names = []string{compat.DefaultPlatform}
	}
	names = slices.Clone(names)
	slices.Sort(names)
	var ps []v1.Platform
	for _, n := range names {
		if !slices.Contains(compat.Platforms, n) {
			return nil, fmt.Errorf("image %s: platform %q is not one of %s", img.Name, n, strings.Join(compat.Platforms, ", "))
		}
		p, err := v1.ParsePlatform(n)
		if err != nil {
			return nil, fmt.Errorf("image %s: platform %q: %w", img.Name, n, err)
		}
		ps = append(ps, *p)
	}
	return ps, nil
}

// platformRunner runs every Job of one platform's resolution on that platform.
type platformRunner struct {
	Runner
	platform string
}

func (r platformRunner) Run(ctx context.Context, j Job) (map[string][]byte, error) {
	j.Platform = r.platform
	return r.Runner.Run(ctx, j)
}

// CheckPlatformBuilders fails when opts route a platform to a builder of
// its own (WithPlatformBuildkit, WithPlatformRunner) that none of imgs has:
// a --builder for linux/arm64 with only amd64 images is a mistake to
// report, not a builder to ignore. LockAll and UpgradeAll check it; a
// caller of Resolve for several images calls it itself.
func CheckPlatformBuilders(imgs []spec.Image, opts ...Option) error {
	o := &options{}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return err
		}
	}
	have := map[string]bool{}
	for _, img := range imgs {
		ps, err := imagePlatforms(img)
		if err != nil {
			return err
		}
		for _, p := range ps {
			have[p.String()] = true
		}
	}
	for _, p := range slices.Sorted(maps.Keys(o.platforms)) {
		if !have[p] {
			return fmt.Errorf("builder for %s: no image to lock has platform %s (they have %s)", p, p, strings.Join(slices.Sorted(maps.Keys(have)), ", "))
		}
	}
	return nil
}
