package resolve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/pep"
	"imagectl/internal/pyindex"
	"imagectl/internal/spec"
	"imagectl/internal/version"
)

// minPip is the oldest pip the lock resolves with: 22.2 added
// `install --dry-run --report`.
const minPip = "22.2"

// pipReadsOnce is the first pip that reads a wheel once when it took the
// wheel's metadata from the index (PEP 658): older ones read it twice at
// the end of `install --dry-run` (pypa/pip#11847, fixed in 23.2), so the
// proxy offers them no metadata and they read each wheel they consider
// once, as bare pip does. pip 25.3 and newer read no wheel at all in
// --dry-run when the index gives its metadata (pypa/pip#13482).
const pipReadsOnce = "23.2"

// resolvePip resolves reqs with the locked pip behind a routing proxy
// (internal/pyindex) that imagectl serves on loopback for the duration of
// the step: pip sees one index, on which each project comes from exactly
// one upstream index (torch's own projects from the torch variant's index,
// every other from the first of the spec's pip_indexes that has it), and
// every wheel has PEP 658 metadata (for pip 23.2 and newer: pipReadsOnce),
// so pip never downloads a wheel to read its dependencies. The report's URLs are mapped back to the upstream ones;
// each wheel records its index.
func resolvePip(ctx context.Context, o *options, img spec.Image, routes pyindex.Routes, image string, debs []lock.Deb, reqs []string, p plan) (*pipResult, lock.Wheel, error) {
	log := logs.From(ctx)
	// The proxy is what talks to the upstream indexes: with the access's
	// trust (system store plus --ca-file), timeouts and retries, and its
	// index credentials. On an address beyond loopback it answers only
	// URLs with its random token (pyindex.WithAddr), so nobody else who
	// reaches the port gets the credentials' reach.
	proxy, err := pyindex.Start(routes,
		pyindex.WithAddr(o.proxyAddr), pyindex.WithHTTPClient(o.access.HTTPClient()), pyindex.WithCacheDir(o.indexCache),
		pyindex.WithAuth(func(r *http.Request) {
			if h := o.access.AuthHeader(r.URL.String()); h != "" {
				r.Header.Set("Authorization", h)
			}
		}))
	if err != nil {
		return nil, lock.Wheel{}, fmt.Errorf("image %s: %w", img.Name, err)
	}
	defer proxy.Close()

	resolver, rf, err := pickResolver(ctx, proxy, img, p.keepResolver)
	if err != nil {
		return nil, lock.Wheel{}, err
	}
	if version.Before(resolver.Version, pipReadsOnce) {
		proxy.OfferMetadata(false)
	}
	log.Info("resolver", "image", img.Name, "pip", resolver.Version, "index", resolver.Index, "metadata", !version.Before(resolver.Version, pipReadsOnce))
	res, err := runPip(ctx, o.runner, image, debs, pipRequest{
		Requirements: reqs, Constraints: p.constraints, Index: proxy.URL(), Python: img.Python,
		Resolver: resolver, ResolverURL: proxy.FileURL(rf),
	}, o.access.HasIndexCredentials())
	st := proxy.Stats()
	log.Info("index traffic", "image", img.Name, "bytes", st.Total(), "pages", st.Pages, "metadata_files", st.MetadataFiles,
		"range_reads", st.RangeReads, "range_bytes", st.RangeBytes, "downloads", st.Downloads, "download_bytes", st.DownloadBytes,
		"served", st.Served, "served_bytes", st.ServedBytes, "cache_hits", st.CacheHits)
	if err != nil {
		var pe *PipError
		code := 0
		if errs := proxy.Errors(); errors.As(err, &pe) && len(errs) > 0 {
			var b strings.Builder
			for _, e := range errs {
				b.WriteString("\n  " + auth.Redact(e.Error()))
				// pip failed because an index did not answer (exit 69) or
				// refused the credentials (77): the lock exits so too.
				if c := exitcode.Code(e); code == 0 && c != exitcode.Failure {
					code = c
				}
			}
			pe.Output += "\nthe index proxy could not answer pip:" + b.String()
		}
		err = fmt.Errorf("image %s: %w", img.Name, err)
		if code != 0 {
			err = exitcode.Wrap(code, err)
		}
		return nil, lock.Wheel{}, err
	}
	for i, w := range res.Wheels {
		s, ok := proxy.Lookup(w.URL)
		if !ok {
			return nil, lock.Wheel{}, fmt.Errorf("image %s: pip resolved %s %s from %s, a file the routing proxy never listed", img.Name, w.Name, w.Version, w.URL)
		}
		if s.SHA256 != "" && s.SHA256 != w.SHA256 {
			return nil, lock.Wheel{}, fmt.Errorf("image %s: %s: pip reports sha256 %s, the index %s lists %s", img.Name, s.Filename, w.SHA256, auth.Redact(s.Index), s.SHA256)
		}
		w.URL, w.Index = s.URL, s.Index
		res.Wheels[i] = w
	}
	return res, resolver, nil
}

// pickResolver chooses the pip wheel: keep when an upgrade holds it (it
// must still be listed), else the newest pure-Python pip >= 22.2 for the
// image's Python on the index that routes "pip".
func pickResolver(ctx context.Context, proxy *pyindex.Proxy, img spec.Image, keep *lock.Wheel) (lock.Wheel, pyindex.File, error) {
	ix, files, err := proxy.Project(ctx, "pip")
	if err != nil {
		return lock.Wheel{}, pyindex.File{}, fmt.Errorf("image %s: finding the pip wheel that resolves and installs: %w", img.Name, err)
	}
	var f pyindex.File
	if keep != nil {
		found := false
		for _, c := range files {
			if c.SHA256 == keep.SHA256 && c.Filename == keep.Filename {
				f, found = c, true
				break
			}
		}
		if !found {
			return lock.Wheel{}, pyindex.File{}, fmt.Errorf("image %s: the locked resolver %s (sha256 %s) is no longer listed by %s", img.Name, keep.Filename, keep.SHA256, auth.Redact(ix))
		}
	} else if f, err = pyindex.NewestPure(ctx, files, "pip", img.Python, minPip); err != nil {
		return lock.Wheel{}, pyindex.File{}, fmt.Errorf("image %s: %s: %w", img.Name, auth.Redact(ix), err)
	}
	w, _ := pep.ParseWheel(f.Filename)
	return lock.Wheel{Name: "pip", Version: w.Version, Filename: f.Filename, URL: f.URL, SHA256: f.SHA256, Index: ix}, f, nil
}
