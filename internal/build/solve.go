package build

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

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

// Dial connects to buildkitd at addr and checks, within timeout, that it
// answers; otherwise it returns an UnavailableError naming addr.
func Dial(ctx context.Context, addr string, timeout time.Duration) (*client.Client, error) {
	c, err := client.New(ctx, addr)
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
func Solve(ctx context.Context, c Client, l *lock.Lock, opts ...Option) (_ *Result, err error) {
	o, err := makeOptions(opts...)
	if err != nil {
		closeStatus(o)
		return nil, err
	}
	root, err := State(ctx, l, opts...)
	if err != nil {
		closeStatus(o)
		return nil, err
	}
	def, err := root.Marshal(ctx, llb.Platform(platform))
	if err != nil {
		closeStatus(o)
		return nil, fmt.Errorf("marshalling the build of %q: %w", l.Name, err)
	}
	arts, err := Artifacts(def.ToPB(), l)
	if err != nil {
		closeStatus(o)
		return nil, err
	}
	sopt, target, err := solveOpt(l, o)
	if err != nil {
		closeStatus(o)
		return nil, err
	}
	if err := preflight(ctx, l, o, target); err != nil {
		closeStatus(o)
		return nil, err
	}
	log := logs.From(ctx)
	log.Debug("solving", "image", l.Name, "target", target, "oci_layout", o.ociLayout)

	cacheImports := make([]gateway.CacheOptionsEntry, 0, len(o.cacheFrom))
	for _, e := range o.cacheFrom {
		cacheImports = append(cacheImports, gateway.CacheOptionsEntry{Type: e.Type, Attrs: e.Attrs})
	}
	baseRef := Plan(l).Base
	// An error of buildFunc reaches c.Build's caller as text only (it
	// travels through buildkitd): keep the typed one.
	var policyErr error
	buildFunc := func(ctx context.Context, gc gateway.Client) (*gateway.Result, error) {
		res, err := gc.Solve(ctx, gateway.SolveRequest{Definition: def.ToPB(), CacheImports: cacheImports})
		if err != nil {
			return nil, err
		}
		if l.Policy.SSHKeyOnly {
			if err := checkSSH(ctx, gc, l, root); err != nil {
				if pe := (*SSHPolicyError)(nil); errors.As(err, &pe) {
					policyErr = pe
				}
				return nil, err
			}
		}
		_, _, cfg, err := gc.ResolveImageConfig(ctx, baseRef, sourceresolver.Opt{
			ImageOpt: &sourceresolver.ResolveImageOpt{Platform: &platform, ResolveMode: "default"},
		})
		if err != nil {
			return nil, fmt.Errorf("reading the config of base %s: %w", baseRef, err)
		}
		var base ocispecs.Image
		if err := json.Unmarshal(cfg, &base); err != nil {
			return nil, fmt.Errorf("parsing the config of base %s: %w", baseRef, err)
		}
		img, err := json.Marshal(ImageConfig(l, base))
		if err != nil {
			return nil, err
		}
		res.AddMeta(exptypes.ExporterImageConfigKey, img)
		// With the base's config, the exporter leaves the base's layers
		// as they are instead of rewriting their timestamps.
		res.AddMeta(exptypes.ExporterImageBaseConfigKey, cfg)
		return res, nil
	}
	resp, err := c.Build(ctx, sopt, "imagectl", buildFunc, o.status)
	if err != nil && policyErr != nil {
		return nil, fmt.Errorf("building %s: %w", l.Name, policyErr)
	}
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", l.Name, mapSolveError(err, arts))
	}
	return result(ctx, l, o, target, resp)
}

func closeStatus(o *options) {
	if o != nil && o.status != nil {
		close(o.status)
	}
}

// solveOpt returns the exporters and caches, and the push target (repo or
// repo:tag; empty when not pushing).
func solveOpt(l *lock.Lock, o *options) (client.SolveOpt, string, error) {
	epoch := strconv.FormatInt(l.SourceDateEpoch, 10)
	rewrite := strconv.FormatBool(o.rewrite)
	img := map[string]string{
		string(exptypes.OptKeyRewriteTimestamp): rewrite,
		string(exptypes.OptKeySourceDateEpoch):  epoch,
		string(exptypes.OptKeyOCITypes):         "true",
	}
	if o.compression != "" {
		img["compression"] = o.compression
		img["force-compression"] = "true"
	}
	target := ""
	if o.push {
		repo := o.name
		if repo == "" {
			repo = l.Repos.Staging
		}
		if repo == "" {
			return client.SolveOpt{}, "", fmt.Errorf("%s: nothing to push to: the lock has no staging repository (repos.staging)", l.Name)
		}
		target = repo
		img[string(exptypes.OptKeyPush)] = "true"
		if o.tag != "" {
			target = repo + ":" + o.tag
		} else {
			img[string(exptypes.OptKeyPushByDigest)] = "true"
		}
		img[string(exptypes.OptKeyName)] = target
		if o.registryHTTP {
			img[string(exptypes.OptKeyInsecure)] = "true"
		}
	}
	sopt := client.SolveOpt{
		Exports:      []client.ExportEntry{{Type: client.ExporterImage, Attrs: img}},
		CacheImports: o.cacheFrom,
		CacheExports: o.cacheTo,
		FrontendAttrs: map[string]string{
			"build-arg:SOURCE_DATE_EPOCH": epoch,
		},
	}
	if o.ociLayout != "" {
		sopt.Exports = append(sopt.Exports, client.ExportEntry{
			Type:      client.ExporterOCI,
			OutputDir: o.ociLayout,
			Attrs: map[string]string{
				"tar":                                   "false",
				string(exptypes.OptKeyRewriteTimestamp): rewrite,
				string(exptypes.OptKeySourceDateEpoch):  epoch,
				string(exptypes.OptKeyOCITypes):         "true",
			},
		})
		if o.compression != "" {
			sopt.Exports[1].Attrs["compression"] = o.compression
			sopt.Exports[1].Attrs["force-compression"] = "true"
		}
	}
	return sopt, target, nil
}

// result reads the exporter's answer and the manifest back.
func result(ctx context.Context, l *lock.Lock, o *options, target string, resp *client.SolveResponse) (*Result, error) {
	r := &Result{Digest: resp.ExporterResponse[exptypes.ExporterImageDigestKey], LockDigest: l.Digest, OCILayout: o.ociLayout}
	if r.Digest == "" {
		if b64 := resp.ExporterResponse[exptypes.ExporterImageDescriptorKey]; b64 != "" {
			var desc ocispecs.Descriptor
			if dt, err := base64.StdEncoding.DecodeString(b64); err == nil && json.Unmarshal(dt, &desc) == nil {
				r.Digest = desc.Digest.String()
			}
		}
	}
	if r.Digest == "" {
		return nil, errors.New("buildkitd reported no image digest")
	}
	if target != "" {
		repo := o.name
		if repo == "" {
			repo = l.Repos.Staging
		}
		r.Ref = repo + "@" + r.Digest
		if o.tag != "" {
			r.Tag = target
		}
	}
	m, err := readManifest(ctx, r, o)
	if err != nil {
		return nil, err
	}
	if m != nil {
		r.Size = m.size
		r.Layers = nameLayers(l, m.layers)
	}
	return r, nil
}

// preflight checks, within the dial timeout, that every registry the build
// talks to answers, so that a dead registry is reported by address instead
// of as a stuck push.
func preflight(ctx context.Context, l *lock.Lock, o *options, target string) error {
	regs := map[string]bool{}
	if r := registryOf(Plan(l).Base); r != "" {
		regs[r] = true
	}
	if target != "" {
		regs[registryOf(target)] = true
	}
	for _, e := range append(append([]client.CacheOptionsEntry{}, o.cacheFrom...), o.cacheTo...) {
		if e.Type == "registry" {
			regs[registryOf(e.Attrs["ref"])] = true
		}
	}
	for reg := range regs {
		if err := ping(ctx, reg, o); err != nil {
			return &UnavailableError{Service: "registry", Addr: reg, Err: err}
		}
	}
	return nil
}

func ping(ctx context.Context, reg string, o *options) error {
	ctx, cancel := context.WithTimeout(ctx, o.dialTimeout)
	defer cancel()
	scheme := schemeOf(reg, o.registryHTTP)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+reg+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no answer within %v: %w", o.dialTimeout, err)
		}
		return err
	}
	resp.Body.Close()
	return nil
}
