// Package resolve turns a spec image into its lock (Image): the base pinned
// by digest, the apt and pip closures resolved inside that base on buildkitd
// (a Runner of Jobs), every wheel routed to one index and hash-pinned, the
// compatibility catalog applied. Check says whether a lock is still its
// image's, offline; Upgrade moves chosen packages of an existing lock.
package resolve

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/mirror"
	"imagectl/internal/pep"
	"imagectl/internal/pyindex"
	"imagectl/internal/spec"
	"imagectl/internal/version"
)

// Resolve locks one concrete image: the base tag to digests, the apt
// closure by apt inside the base, the Python closure by pip inside the base
// with that closure installed, each artifact with URL, sha256 and size.
//
// Resolution runs as BuildKit solves (see WithBuildkit); nothing is
// resolved by imagectl itself. The lock comes back sealed: normalized, with
// its Digest set, as Write would write it and Read read it back.
func Image(ctx context.Context, img spec.Image, opts ...Option) (*lock.Lock, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	l, _, err := resolve(ctx, img, o, nil)
	if err != nil {
		return nil, err
	}
	return l, l.Seal()
}

// plan is what an upgrade holds still.
type plan struct {
	constraints  []string   // "name==version" for pip
	keepApt      []lock.Deb // non-nil: reuse this apt closure
	keepBase     *lock.Base // non-nil: reuse this base (and keepEpoch)
	keepEpoch    int64
	keepPython   *lock.Python // with keepApt: the Python it provides
	keepResolver *lock.Wheel  // non-nil: resolve and install with this pip
}

// resolve locks every platform of img, each inside its own base with the
// plan of plans[platform] (zero: nothing held), into one lock: the first
// platform's resolution at the top, the others in Platforms. The shared
// part (the core, above all) must come out the same on every platform.
func resolve(ctx context.Context, img spec.Image, o *options, plans map[string]plan) (*lock.Lock, map[string]*pipResult, error) {
	plats, err := imagePlatforms(img)
	if err != nil {
		return nil, nil, err
	}
	var top *lock.Lock
	results := map[string]*pipResult{}
	for _, plat := range plats {
		l, res, err := resolveOne(ctx, img, o, plans[plat.String()], plat)
		if err != nil {
			if len(plats) > 1 {
				return nil, nil, fmt.Errorf("platform %s: %w", plat, err)
			}
			return nil, nil, err
		}
		results[plat.String()] = res
		if top == nil {
			top = l
			continue
		}
		if !reflect.DeepEqual(l.Core, top.Core) {
			return nil, nil, &PlatformMismatchError{Image: img.Name, Platform: plat.String(), Core: l.Core, First: top.Base.Platform, FirstCore: top.Core}
		}
		top.Platforms = append(top.Platforms, l.Resolution())
	}
	top.Normalize()
	return top, results, nil
}

// PlatformMismatchError reports platforms whose resolutions disagree on the
// frozen core (e.g. pip found torch 2.6.0+cu126 for one platform and a cpu
// build for the other): one lock cannot hold both.
type PlatformMismatchError struct {
	Image, Platform, First string
	Core, FirstCore        lock.Core
}

func (e *PlatformMismatchError) Error() string {
	return fmt.Sprintf("image %s: %s resolved the core %s, %s resolved %s: every platform must get the same torch, CUDA, NCCL and cuDNN", e.Image, e.Platform, e.Core, e.First, e.FirstCore)
}

// resolveOne locks img for one platform, inside that platform's base.
func resolveOne(ctx context.Context, img spec.Image, o *options, p plan, plat v1.Platform) (*lock.Lock, *pipResult, error) {
	log := logs.From(ctx).With("platform", plat.String())
	po := *o
	po.runner = platformRunner{Runner: o.runnerFor(plat.String()), platform: plat.String()}
	o = &po
	inputs, err := InputsDigest(img)
	if err != nil {
		return nil, nil, err
	}
	if img.Python == "" {
		return nil, nil, fmt.Errorf("image %s: python is required", img.Name)
	}
	core, cres, err := applyCatalog(o.catalog, img)
	if err != nil {
		return nil, nil, err
	}
	if !pythonMinor.MatchString(img.Python) {
		return nil, nil, fmt.Errorf("image %s: python %q is not MAJOR.MINOR (e.g. 3.11)", img.Name, img.Python)
	}
	// user:password@ in an index URL moves into the access; pip, the proxy's
	// listing and the lock see the URL without it.
	spIndexes, err := o.moveIndexCredentials(img.Name, img.PipIndexes)
	if err != nil {
		return nil, nil, err
	}
	routes := pyindex.Routes{Indexes: spIndexes}
	if img.Torch != "" {
		ix, err := torchIndex(img, cres.Wheel)
		if err != nil {
			return nil, nil, err
		}
		if len(cres.Wheel.TorchIndexProjects) == 0 {
			return nil, nil, fmt.Errorf("image %s: the catalog names no torch_index_projects for torch %s %s: nothing would come from its index", img.Name, img.Torch, cres.Wheel.Variant)
		}
		routes.Torch, routes.TorchOnly = ix, cres.Wheel.FromTorchIndex
	}
	var indexes []string
	if routes.Torch != "" {
		indexes = append(indexes, routes.Torch)
	}
	for _, ix := range routes.Indexes {
		if !slices.Contains(indexes, ix) {
			indexes = append(indexes, ix)
		}
	}
	for _, ix := range indexes {
		if u, err := url.Parse(ix); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, nil, fmt.Errorf("image %s: pip index %q is not a URL", img.Name, auth.Redact(ix))
		}
	}
	if err := checkIndexes(ctx, o.access, indexes); err != nil {
		return nil, nil, fmt.Errorf("image %s: %w", img.Name, err)
	}
	o.runner = accessRunner{inner: o.runner, access: o.access}

	var (
		base    lock.Base
		created int64
	)
	if p.keepBase != nil && p.keepBase.Ref == img.Base && p.keepBase.Mirror == mirrorOf(img) && p.keepBase.Platform == plat.String() {
		base, created = *p.keepBase, p.keepEpoch
	} else if base, created, err = resolveBase(ctx, img.Base, img.Repos.Mirror, plat, o.access.RemoteOptions()); err != nil {
		return nil, nil, o.access.Classify(fmt.Errorf("image %s: %w", img.Name, err))
	}
	pinned := base.Pull()
	log.Info("base resolved", "image", img.Name, "base", pinned)

	debs, py := p.keepApt, lock.Python{}
	if p.keepPython != nil {
		py = *p.keepPython
	}
	if debs == nil {
		var probe pythonProbe
		debs, probe, err = resolveApt(ctx, o.runner, pinned, img.Apt, img.Python)
		if err != nil {
			return nil, nil, fmt.Errorf("image %s: %w", img.Name, err)
		}
		switch {
		case probe.path != "":
			py = lock.Python{Path: probe.path, Provider: "base"}
		case len(probe.install) > 0:
			py = lock.Python{Provider: "apt"}
		default:
			return nil, nil, &PythonError{Image: img.Name, Base: img.Base, Want: img.Python, Offered: probe.offered}
		}
	}
	log.Info("apt resolved", "image", img.Name, "debs", len(debs), "python", py.Provider)

	reqs := append([]string(nil), img.Pip...)
	if img.Torch != "" && !slices.ContainsFunc(reqs, func(r string) bool { return reqName(r) == "torch" }) {
		reqs = append(reqs, "torch=="+img.Torch)
	}
	res := &pipResult{Wheels: []lock.Wheel{}, items: map[string]reportItem{}}
	var resolver lock.Wheel
	if len(reqs) > 0 {
		res, resolver, err = resolvePip(ctx, o, img, routes, pinned, debs, reqs, p)
		if err != nil {
			return nil, nil, err
		}
		if res.Python != img.Python && !strings.HasPrefix(res.Python, img.Python+".") {
			return nil, nil, fmt.Errorf("image %s: python%s in the base is %s, the spec asks python %s", img.Name, img.Python, res.Python, img.Python)
		}
		if py.Path != "" && res.Path != py.Path {
			return nil, nil, fmt.Errorf("image %s: the apt step found python%s at %s, the pip step at %s", img.Name, img.Python, py.Path, res.Path)
		}
		py.Path, py.Version = res.Path, res.Python
		if err := checkTorch(img, core, res); err != nil {
			return nil, nil, err
		}
		if core.Torch != "" {
			core.Torch = res.items["torch"].Metadata.Version
		}
		sized := append(append(make([]lock.Wheel, 0, len(res.Wheels)+1), res.Wheels...), resolver)
		if err := fillSizes(ctx, o.access, sized); err != nil {
			return nil, nil, fmt.Errorf("image %s: %w", img.Name, err)
		}
		copy(res.Wheels, sized)
		resolver = sized[len(sized)-1]
	}
	log.Info("pip resolved", "image", img.Name, "wheels", len(res.Wheels))
	if err := checkForbidden(ctx, o.runner, img, pinned, debs, res); err != nil {
		return nil, nil, err
	}

	epoch := created
	if o.epoch != nil {
		epoch = *o.epoch
	}
	frozen := make([]string, 0, len(img.Frozen))
	for _, f := range img.Frozen {
		frozen = append(frozen, pep.Normalize(f))
	}
	rt := img.Runtime
	if rt.DriverFloor == "" {
		rt.DriverFloor = core.DriverFloor
	}
	rt.Image.Name, rt.Image.CUDA, rt.Image.Torch = img.Name, core.CUDA, core.Torch
	rt.Image.Python, rt.Image.NCCL, rt.Image.CUDNN = core.Python, core.NCCL, core.CUDNN
	l := &lock.Lock{
		SchemaVersion:   lock.SchemaVersion,
		Name:            img.Name,
		Spec:            lock.Source{Path: specPath(o.root, img.File), InputsDigest: inputs},
		CatalogDigest:   o.catalog.Digest(),
		SourceDateEpoch: epoch,
		Core:            core,
		Frozen:          frozen,
		Base:            base,
		Python:          py,
		Resolver:        resolver,
		Apt:             append([]lock.Deb{}, debs...),
		Pip:             res.Wheels,
		PipIndexes:      indexes,
		Env:             img.Env,
		Labels:          img.Labels,
		Repos:           img.Repos,
		Runtime:         rt,
		Verify:          img.Verify,
		Policy:          img.Policy,
	}
	l.Normalize()
	return l, res, nil
}

// mirrorOf is the repository the image's base is mirrored to ("" without
// repos.mirror, or when it does not parse: resolveBase reports that).
func mirrorOf(img spec.Image) string {
	if img.Repos.Mirror == "" {
		return ""
	}
	r, err := mirror.Target(img.Base, img.Repos.Mirror)
	if err != nil {
		return ""
	}
	return r.Name()
}

// checkTorch checks the resolved torch against the core: its release and
// variant, and that the wheel's own NCCL and cuDNN pins are the spec's.
func checkTorch(img spec.Image, core lock.Core, res *pipResult) error {
	if img.Torch == "" {
		return nil
	}
	it, ok := res.items["torch"]
	if !ok {
		return fmt.Errorf("image %s: pip's resolution has no torch", img.Name)
	}
	v := it.Metadata.Version
	release, label := version.SplitLocal(v)
	if release != img.Torch {
		return fmt.Errorf("image %s: pip resolved torch %s, the spec asks %s", img.Name, v, img.Torch)
	}
	if label != "" && label != core.TorchVariant {
		return fmt.Errorf("image %s: pip resolved torch %s, a %s wheel; the spec's variant is %s", img.Name, v, label, core.TorchVariant)
	}
	for _, c := range []struct{ what, prefix, want string }{
		{"nccl", "nvidia-nccl-", core.NCCL},
		{"cudnn", "nvidia-cudnn-", core.CUDNN},
	} {
		if c.want == "" {
			continue
		}
		ps := pins(it.Metadata.RequiresDist, c.prefix)
		if len(ps) == 0 {
			return fmt.Errorf("image %s: torch %s pins no %s* package, the spec asks %s %s", img.Name, v, c.prefix, c.what, c.want)
		}
		names := make([]string, 0, len(ps))
		for n := range ps {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if ps[n] != c.want {
				return fmt.Errorf("image %s: torch %s pins %s==%s, the spec's %s is %s", img.Name, v, n, ps[n], c.what, c.want)
			}
			if got, ok := res.items[n]; ok && got.Metadata.Version != c.want {
				return fmt.Errorf("image %s: pip resolved %s %s, the spec's %s is %s", img.Name, n, got.Metadata.Version, c.what, c.want)
			}
		}
	}
	return nil
}

// specPath is file relative to root (the working directory by default),
// with forward slashes; file itself when it lies outside.
func specPath(root, file string) string {
	if file == "" {
		return ""
	}
	if root == "" {
		root = "."
	}
	absRoot, err1 := filepath.Abs(root)
	absFile, err2 := filepath.Abs(file)
	if err := errors.Join(err1, err2); err == nil {
		if rel, err := filepath.Rel(absRoot, absFile); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(file)
}
