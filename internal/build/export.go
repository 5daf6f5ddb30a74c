package build

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	bkSession "github.com/moby/buildkit/session"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

	"imagectl/internal/auth"
	"imagectl/internal/auth/bkauth"
	"imagectl/internal/build/layerplan"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
)

// solveOpt returns the exporters and caches, and the push target (repo or
// repo:tag; empty when not pushing).
func solveOpt(l *lock.Lock, o *options) (client.SolveOpt, string, error) {
	epoch := strconv.FormatInt(o.fileEpoch(l), 10)
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
		if o.access.MarkedInsecure(auth.RegistryOf(target)) {
			img[string(exptypes.OptKeyInsecure)] = "true"
		}
	}
	sopt := client.SolveOpt{
		Exports:      []client.ExportEntry{{Type: client.ExporterImage, Attrs: img}},
		Session:      session(l, o, target),
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

// session is what buildkitd borrows from this process: registry
// credentials (the Docker config) for the base, the push target and the
// caches, and the auth headers of the HTTP fetches whose hosts have index
// credentials, as secrets.
func session(l *lock.Lock, o *options, target string) []bkSession.Attachable {
	var regs []string
	for _, ref := range []string{layerplan.Of(l).Base, target} {
		if r := auth.RegistryOf(ref); r != "" {
			regs = append(regs, r)
		}
	}
	for _, e := range append(append([]client.CacheOptionsEntry{}, o.cacheFrom...), o.cacheTo...) {
		if e.Type == "registry" {
			regs = append(regs, auth.RegistryOf(e.Attrs["ref"]))
		}
	}
	var urls []string
	for _, d := range l.Apt {
		urls = append(urls, d.URL)
	}
	for _, w := range l.Pip {
		urls = append(urls, w.URL)
	}
	if l.Resolver.URL != "" {
		urls = append(urls, l.Resolver.URL)
	}
	return bkauth.Session(o.access, regs, o.access.HTTPAuthSecrets(urls))
}

// result reads the exporter's answer and the manifest back.
func result(ctx context.Context, l *lock.Lock, o *options, target string, resp *client.SolveResponse, targets []buildTarget) (*Result, error) {
	defer func(start time.Time) { logs.From(ctx).Debug("result read back", "took", time.Since(start)) }(time.Now())
	r := &Result{Digest: resp.ExporterResponse[exptypes.ExporterImageDigestKey], LockDigest: l.Digest, OCILayout: o.ociLayout, CUDADuplicates: cudaDuplicatesOf(targets)}
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
	if len(targets) > 1 {
		if err := readIndex(ctx, r, o, targets); err != nil {
			return nil, err
		}
		return r, nil
	}
	if len(o.prioritized) > 0 {
		if err := prioritizeResult(ctx, r, o); err != nil {
			return nil, err
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
