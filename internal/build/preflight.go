package build

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/moby/buildkit/client"
	gateway "github.com/moby/buildkit/frontend/gateway/client"

	"imagectl/internal/auth"
	"imagectl/internal/build/layerplan"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
)

// preflight checks, within the dial timeout, that every registry the build
// talks to answers and takes the credentials the Docker config has for it
// (ggcr's transport: challenge, then basic auth or a token for the pull or
// push scope), so that a dead registry is reported by address and a refused
// login by host and credential source (exit 77), instead of as a stuck or
// failed push.
//
// It returns the transport each check authenticated, by registry, for the
// read-back to reuse (no second ping and token exchange).
func preflight(ctx context.Context, l *lock.Lock, o *options, target string) (map[string]http.RoundTripper, error) {
	scopes := map[string][]string{} // registry -> scopes
	add := func(ref, action string) {
		r, err := name.ParseReference(ref, refNameOptions(ref, o)...)
		if err != nil {
			return
		}
		reg := r.Context().RegistryStr()
		scopes[reg] = append(scopes[reg], r.Context().Scope(action))
	}
	add(layerplan.Of(l).Base, transport.PullScope)
	if target != "" {
		add(target, transport.PushScope)
	}
	for _, e := range o.cacheFrom {
		if e.Type == "registry" {
			add(e.Attrs["ref"], transport.PullScope)
		}
	}
	for _, e := range o.cacheTo {
		if e.Type == "registry" {
			add(e.Attrs["ref"], transport.PushScope)
		}
	}
	start := time.Now()
	pinged := map[string]http.RoundTripper{}
	for _, reg := range slices.Sorted(maps.Keys(scopes)) {
		t, err := ping(ctx, reg, scopes[reg], o)
		if err != nil {
			return nil, err
		}
		pinged[reg] = t
	}
	logs.From(ctx).Debug("registries checked", "registries", len(scopes), "took", time.Since(start))
	return pinged, nil
}

// exportGate is a Client whose solves hand their result to the exporter
// only once gate() (the index checks) returns nil.
type exportGate struct {
	Client
	gate func() error
}

func (g exportGate) Build(ctx context.Context, opt client.SolveOpt, product string, buildFunc gateway.BuildFunc, status chan *client.SolveStatus) (*client.SolveResponse, error) {
	return g.Client.Build(ctx, opt, product, func(ctx context.Context, gc gateway.Client) (*gateway.Result, error) {
		res, err := buildFunc(ctx, gc)
		if err != nil {
			return nil, err
		}
		if err := g.gate(); err != nil {
			return nil, err
		}
		return res, nil
	}, status)
}

// indexPreflight asks every host the build fetches from (wheel indexes,
// apt mirrors, over all targets) once, with the credential the access has
// for it, all hosts at once and beside the solve: a 401/403 is an
// *auth.Error naming the host and the credential source. buildkitd would
// report it as a sha256 mismatch (it hashes the refusal's body), or not at
// all for an artifact it has cached. Other failures are left to the fetch
// itself. The returned context is cancelled as soon as a host refuses, and
// by release; wait waits for every check and returns the first refusal in
// host order (nil when none), the same at every call.
func indexPreflight(ctx context.Context, targets []buildTarget, o *options) (_ context.Context, wait func() error, release func()) {
	first := map[string]string{} // host -> first URL
	var hosts []string
	add := func(raw string) {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return
		}
		if _, ok := first[u.Host]; !ok {
			first[u.Host] = raw
			hosts = append(hosts, u.Host)
		}
	}
	for _, t := range targets {
		for _, w := range t.lock.Pip {
			add(w.URL)
		}
		add(t.lock.Resolver.URL)
		for _, d := range t.lock.Apt {
			add(d.URL)
		}
	}
	bctx, cancel := context.WithCancel(ctx)
	refusals := make([]error, len(hosts))
	took := make([]time.Duration, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			start := time.Now()
			cctx, done := context.WithTimeout(ctx, o.dialTimeout)
			_, err := o.access.CheckIndex(cctx, first[h])
			done()
			took[i] = time.Since(start)
			if ae := (*auth.Error)(nil); errors.As(err, &ae) {
				refusals[i] = err
				cancel()
			}
		})
	}
	return bctx, sync.OnceValue(func() error {
		wg.Wait()
		logs.From(ctx).Debug("index hosts checked", "hosts", len(hosts), "slowest", slices.Max(append(took, 0)))
		for _, err := range refusals {
			if err != nil {
				return err
			}
		}
		return nil
	}), cancel
}

func ping(ctx context.Context, reg string, scopes []string, o *options) (http.RoundTripper, error) {
	ctx, cancel := context.WithTimeout(ctx, o.dialTimeout)
	defer cancel()
	r, err := name.NewRegistry(reg, refNameOptions(reg+"/x", o)...)
	if err != nil {
		return nil, fmt.Errorf("registry %q: %w", reg, err)
	}
	t, err := o.access.RegistryTransport(ctx, r, scopes...)
	var ue *auth.UnreachableError
	if errors.As(err, &ue) {
		return nil, &UnavailableError{Service: "registry", Addr: reg, Err: ue.Err}
	}
	return t, err
}
