package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	"github.com/moby/buildkit/identity"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

	"imagectl/internal/build/layerplan"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
)

// Client is the part of BuildKit's client that Solve uses; *client.Client
// implements it.
type Client interface {
	Build(ctx context.Context, opt client.SolveOpt, product string, buildFunc gateway.BuildFunc, statusChan chan *client.SolveStatus) (*client.SolveResponse, error)
}

// DefaultAddr is buildkitd's address when neither --addr nor BUILDKIT_HOST
// says otherwise.
const DefaultAddr = "unix:///run/buildkit/buildkitd.sock"

// Addr returns addr, else $BUILDKIT_HOST, else DefaultAddr.
func Addr(addr string) string {
	if addr != "" {
		return addr
	}
	if v := os.Getenv("BUILDKIT_HOST"); v != "" {
		return v
	}
	return DefaultAddr
}

// Dial connects to buildkitd at addr (with the client options opts: TLS,
// TLS.ClientOptions) and checks, within timeout, that it answers;
// otherwise it returns an UnavailableError naming addr.
func Dial(ctx context.Context, addr string, timeout time.Duration, opts ...client.ClientOpt) (*client.Client, error) {
	c, err := client.New(ctx, addr, opts...)
	if err != nil {
		return nil, &UnavailableError{Service: "buildkitd", Addr: addr, Err: err}
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := c.ListWorkers(pctx); err != nil {
		c.Close()
		if pctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v: %w", timeout, err)
		}
		return nil, &UnavailableError{Service: "buildkitd", Addr: addr, Err: err}
	}
	return c, nil
}

// Result describes a built image.
type Result struct {
	// Digest is the image manifest's digest, sha256:...
	Digest string `json:"digest"`
	// Ref is repo@digest when the image was pushed.
	Ref string `json:"ref,omitempty"`
	// Tag is repo:tag when the image was also tagged.
	Tag string `json:"tag,omitempty"`
	// OCILayout is the layout directory the image was written to.
	OCILayout string `json:"oci_layout,omitempty"`
	// Size is the manifest, config and layers together, in bytes (0 when
	// the image was neither pushed nor written to a layout).
	Size int64 `json:"size"`
	// Layers are the manifest's layers, base first.
	Layers []LayerInfo `json:"layers,omitempty"`
	// LockDigest is the digest of the lock the image was built from.
	LockDigest string `json:"lock_digest"`
	// Platforms are the images of a multi-platform build, one per
	// platform in the lock's order; Digest (and Ref) is then their OCI
	// image index, Size the index's bytes plus every image's and Layers
	// empty. Nil for a single-platform build.
	Platforms []PlatformImage `json:"platforms,omitempty"`
	// CUDADuplicates are the CUDA libraries the image (each platform's)
	// holds twice, as a base deb and as a wheel; empty when none is.
	CUDADuplicates []CUDADuplicate `json:"cuda_duplicates,omitempty"`
	// Prioritized is what WithPrioritizedFiles' rewrite did (nil without).
	Prioritized *PrioritizeReport `json:"prioritized,omitempty"`
}

// PlatformImage is one platform's image inside a built index.
type PlatformImage struct {
	// Platform is "linux/arm64".
	Platform string `json:"platform"`
	// Digest is the image manifest's digest.
	Digest string      `json:"digest"`
	Size   int64       `json:"size"`
	Layers []LayerInfo `json:"layers,omitempty"`
}

// LayerInfo is one layer of the built image.
type LayerInfo struct {
	// Name is the planned layer it holds ("base", "system", "big:torch", ...).
	Name      string `json:"name"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
}

// Solve builds l on buildkitd through c: it pushes the image by digest to
// the staging repository (WithPush) and/or writes an OCI layout
// (WithOCILayout). Every install step clamps the times of what it writes to
// the lock's SOURCE_DATE_EPOCH, and the image config carries it as its
// creation time, so two clean builds give the same digest.
//
// A lock of several platforms is built one image per platform, at once,
// each on WithPlatformClient's client for its platform (else c), pushed by
// digest; the OCI image index of them is then assembled and pushed by
// digest, and the tag (WithTag) moved to it last. The index depends on the
// children only: one builder or one per platform give the same digest.
func Solve(ctx context.Context, c Client, l *lock.Lock, opts ...Option) (res *Result, err error) {
	o, err := makeOptions(opts...)
	// The one close of WithStatus's channel, on every path, after the
	// forwarders of the solves' own channels are done (deferred later,
	// run earlier).
	defer closeStatus(o)
	if err != nil {
		return nil, err
	}
	if err := checkPrioritized(l, o); err != nil {
		return nil, err
	}
	sopt, target, soptErr := solveOpt(l, o)
	// The registry checks run while the LLB is made.
	pctx, cancelPreflight := context.WithCancel(ctx)
	defer cancelPreflight()
	type pinged struct {
		transports map[string]http.RoundTripper
		err        error
	}
	preflightDone := make(chan pinged, 1)
	if soptErr == nil {
		go func() {
			t, err := preflight(pctx, l, o, target)
			preflightDone <- pinged{t, err}
		}()
	}
	targets, err := buildTargets(ctx, l, o)
	if err != nil {
		return nil, err
	}
	arts := map[digest.Digest]Artifact{}
	for _, t := range targets {
		a, err := Artifacts(t.def.ToPB(), t.lock)
		if err != nil {
			return nil, err
		}
		maps.Copy(arts, a)
	}
	if soptErr != nil {
		return nil, soptErr
	}
	p := <-preflightDone
	if p.err != nil {
		return nil, p.err
	}
	o.pinged = p.transports
	clients := make([]Client, len(targets))
	for i, t := range targets {
		clients[i] = o.clientFor(t.platform, c)
		if clients[i] == nil {
			return nil, fmt.Errorf("building %s: no buildkitd for %s (Solve's client is nil and no WithPlatformClient names it)", l.Name, platformString(t.platform))
		}
	}
	// The index checks run beside the solve: a refusal cancels it and is
	// the error, whatever the solve made of it. An export that names
	// something (a tag, a layout, a cache ref, an index) waits for every
	// host's answer; an image pushed by digest alone, content-addressed,
	// need not.
	ctx, indexRefusal, release := indexPreflight(ctx, targets, o)
	defer func() {
		if ie := indexRefusal(); ie != nil {
			res, err = nil, ie
		}
		release()
	}()
	if len(targets) > 1 || o.tag != "" || o.ociLayout != "" || len(o.cacheTo) > 0 {
		for i := range clients {
			clients[i] = exportGate{clients[i], indexRefusal}
		}
	}
	log := logs.From(ctx)
	log.Debug("solving", "image", l.Name, "target", target, "oci_layout", o.ociLayout, "platforms", len(targets))
	if len(targets) > 1 {
		return solveIndex(ctx, clients, l, o, targets, arts, target)
	}
	chans, forwarded := forwardStatus(o, targets)
	resp, err := solveRefetching(ctx, clients[0], o, sopt, targets[0], chans[0], arts)
	forwarded()
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", l.Name, err)
	}
	return result(ctx, l, o, target, resp, targets)
}

// solveTarget solves one platform's image on c and exports it as sopt
// says; c closes status when it returns.
func solveTarget(ctx context.Context, c Client, o *options, sopt client.SolveOpt, t buildTarget, status chan *client.SolveStatus) (*client.SolveResponse, error) {
	cacheImports := make([]gateway.CacheOptionsEntry, 0, len(sopt.CacheImports))
	for _, e := range sopt.CacheImports {
		cacheImports = append(cacheImports, gateway.CacheOptionsEntry{Type: e.Type, Attrs: e.Attrs})
	}
	// An error of buildFunc reaches c.Build's caller as text only (it
	// travels through buildkitd): keep the typed one.
	var policyErr error
	log := logs.From(ctx)
	buildFunc := func(ctx context.Context, gc gateway.Client) (*gateway.Result, error) {
		// The base's config is asked for beside the solve (two round trips
		// to buildkitd at once instead of one after the other).
		baseRef := layerplan.Of(t.lock).Base
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type baseConfig struct {
			cfg []byte
			err error
		}
		baseCh := make(chan baseConfig, 1)
		go func() {
			_, _, cfg, err := gc.ResolveImageConfig(rctx, baseRef, sourceresolver.Opt{
				ImageOpt: &sourceresolver.ResolveImageOpt{Platform: &t.platform, ResolveMode: "default"},
			})
			baseCh <- baseConfig{cfg, err}
		}()
		res, err := gc.Solve(ctx, gateway.SolveRequest{Definition: t.def.ToPB(), CacheImports: cacheImports})
		if err != nil {
			return nil, err
		}
		if t.lock.Policy.SSHKeyOnly {
			if err := checkSSH(ctx, gc, t.lock, t.root); err != nil {
				if pe := (*SSHPolicyError)(nil); errors.As(err, &pe) {
					policyErr = pe
				}
				return nil, err
			}
		}
		// Reported, never failed: CUDA libraries both a base deb and a wheel.
		if ref, err := res.SingleRef(); err == nil && ref != nil {
			if dups, err := cudaDuplicates(ctx, ref, t.lock, log); err != nil {
				log.Debug("not checking for CUDA shipped twice", "err", err)
			} else {
				logCUDADuplicates(log, t.lock.Name, platformString(t.platform), dups)
				t.cuda.set(platformString(t.platform), dups)
			}
		}
		bc := <-baseCh
		cfg := bc.cfg
		if bc.err != nil {
			return nil, fmt.Errorf("reading the config of base %s: %w", baseRef, bc.err)
		}
		var base ocispecs.Image
		if err := json.Unmarshal(cfg, &base); err != nil {
			return nil, fmt.Errorf("parsing the config of base %s: %w", baseRef, err)
		}
		img, err := json.Marshal(ImageConfig(t.lock, base))
		if err != nil {
			return nil, err
		}
		res.AddMeta(exptypes.ExporterImageConfigKey, img)
		// With the base's config, the exporter leaves the base's layers
		// as they are instead of rewriting their timestamps.
		res.AddMeta(exptypes.ExporterImageBaseConfigKey, cfg)
		return res, nil
	}
	// The build's BuildKit ref, logged, names it in buildkitd's history
	// (buildctl debug history inspect REF).
	sopt.Ref = identity.NewID()
	logs.From(ctx).Debug("solving on buildkitd", "image", t.lock.Name, "platform", platformString(t.platform), "ref", sopt.Ref)
	resp, err := c.Build(ctx, sopt, "imagectl", buildFunc, status)
	if err != nil && policyErr != nil {
		return nil, policyErr
	}
	return resp, err
}

// buildTarget is one platform of a build: its view of the lock, its root
// filesystem and the LLB of it.
type buildTarget struct {
	lock     *lock.Lock
	platform ocispecs.Platform
	root     llb.State
	def      *llb.Definition
	// cuda is what the CUDA-shipped-twice check found in the solve.
	cuda *cudaFindings
}

// buildTargets makes the LLB of every platform of l, each from that
// platform's view of the lock (lock.ForPlatform) with its own init binary.
func buildTargets(ctx context.Context, l *lock.Lock, o *options) ([]buildTarget, error) {
	var ts []buildTarget
	for _, p := range l.PlatformNames() {
		view, err := l.ForPlatform(p)
		if err != nil {
			return nil, err
		}
		plat, err := platformOf(view)
		if err != nil {
			return nil, err
		}
		path := o.initPathFor(plat)
		if err := checkInitArch(path, plat); err != nil {
			return nil, err
		}
		initBin, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the init binary: %w (build it with `make build`, or pass --init)", err)
		}
		root, err := state(view, o.fileEpoch(view), plat, initBin, o.access)
		if err != nil {
			return nil, err
		}
		def, err := root.Marshal(ctx, llb.Platform(plat))
		if err != nil {
			return nil, fmt.Errorf("marshalling the build of %q for %s: %w", l.Name, p, err)
		}
		ts = append(ts, buildTarget{lock: view, platform: plat, root: root, def: def, cuda: &cudaFindings{}})
	}
	return ts, nil
}
