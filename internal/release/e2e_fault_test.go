package release

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"imagectl/internal/auth"
	"imagectl/internal/build"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/spec"
	"imagectl/internal/testenv/faultproxy"
)

// faultNet is the network the fault suite's releases run with: the
// default tries, a quick backoff, and timeouts short enough that a stall
// costs the suite seconds, not minutes.
var faultNet = auth.Network{ResponseTimeout: 3 * time.Second, IdleTimeout: 2 * time.Second, Backoff: 50 * time.Millisecond, MaxBackoff: 2 * time.Second}

// faultyDemo is the demo release with a fault proxy in front of its wheel
// index and one in front of its registry: the spec's registry and
// wheel_index name the proxies, so imagectl (lock, build's checks, sign,
// verify, promote), buildkitd (the base's pull, the image's push), the
// containerd that verify runs the image in and cosign's library all go
// through them.
type faultyDemo struct {
	*demoRelease
	index, registry *faultproxy.Proxy
	access          *auth.Access
	indexCache      string
}

func newFaultyDemo(t *testing.T, ctx context.Context, run string, index, registry []faultproxy.Rule) *faultyDemo {
	t.Helper()
	// Wheels of this run's own (a file naming the run in each): buildkitd
	// caches an HTTP source by filename and sha256, not by URL, and would
	// not fetch a wheel another test's build fetched.
	nonce := fmt.Sprintf("%s %d\n", run, time.Now().UnixNano())
	d := &faultyDemo{demoRelease: newDemoReleaseOf(t, ctx, run, demoWheels(1<<20, nonce)), indexCache: t.TempDir()}
	var err error
	if d.index, err = faultproxy.Start(strings.TrimSuffix(d.demoRelease.index.URL, "/simple/"), index...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.index.Close() })
	if d.registry, err = faultproxy.Start("http://"+d.env.Registry, registry...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.registry.Close() })
	reg := d.registry.Addr()
	d.imgs, err = spec.Load(ctx, []string{filepath.Join(d.env.Root, "specs", "demo.hcl")},
		spec.WithVars(map[string]string{"registry": reg, "wheel_index": "http://" + d.index.Addr() + "/simple/"}))
	if err != nil || len(d.imgs) != 1 {
		t.Fatalf("spec.Load(demo) = %d images, %v", len(d.imgs), err)
	}
	prefix := fmt.Sprintf("%s-%d", run, time.Now().UnixNano())
	d.imgs[0].Repos = spec.Repos{Staging: reg + "/" + prefix + "/staging/demo", Release: reg + "/" + prefix + "/demo"}
	if d.access, err = auth.New(auth.Config{Network: faultNet}); err != nil {
		t.Fatal(err)
	}
	return d
}

// stages are the demo's real stages over the access with faultNet.
func (d *faultyDemo) stages(t *testing.T) *Real {
	t.Helper()
	r := d.demoRelease.stages(t, "2026-11")
	r.cfg.Access = d.access
	// An index cache of the test's own: the lock's proxy reads every wheel
	// from the faulty index (and retries there), and the build's buildkitd
	// fetches each again by its locked URL (build re-solves when one fails).
	r.cfg.LockOptions = append(r.cfg.LockOptions, resolve.WithAccess(d.access), resolve.WithIndexCache(d.indexCache))
	r.cfg.BuildOptions = append(r.cfg.BuildOptions, build.WithAccess(d.access))
	return r
}

// buildkitdWheelGET matches the build's own fetches of the locked wheels:
// buildkitd's HTTP source sends User-Agent buildkit/VERSION.
func buildkitdWheelGET(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".whl") && strings.HasPrefix(r.UserAgent(), "buildkit/")
}

// TestReleaseThroughTransientFaults runs the whole demo release (lock,
// build, sign, verify in containerd, promote) while its wheel index
// answers 502 once to each path (the failure measured on main: "finding
// the pip wheel ...: HTTP 502"), resets one connection and adds latency,
// and answers the build's buildkitd 502 once to each wheel and resets its
// first wheel fetch (buildkitd's HTTP source hashes the 502's page and does
// not retry: the build solves again),
// and its registry answers a burst of 503s (one with Retry-After),
// resets connections, cuts a blob short and stalls one mid-body: every
// fault is retried (imagectl's transport, BuildKit's and containerd's
// own) and the release is promoted. Each fault must have fired.
func TestReleaseThroughTransientFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d := newFaultyDemo(t, ctx, "e2e-faults",
		[]faultproxy.Rule{
			// The build's wheel fetches first: the lock's proxy has read
			// every wheel (through the rules below) before the build asks.
			{Name: "build's wheel reset", Times: 1, Match: buildkitdWheelGET, Fault: faultproxy.Fault{Reset: true}},
			{Name: "build's wheel 502 once per path", PerPath: true, Times: 1, Match: buildkitdWheelGET, Fault: faultproxy.Fault{Status: http.StatusBadGateway}},
			{Name: "index reset", Times: 1, Fault: faultproxy.Fault{Reset: true}},
			{Name: "index 502 once per path", PerPath: true, Times: 1, Fault: faultproxy.Fault{Status: http.StatusBadGateway}},
		},
		[]faultproxy.Rule{
			{Name: "registry 503 burst", Methods: []string{http.MethodGet, http.MethodHead}, Path: "/manifests/", Times: 2, Fault: faultproxy.Fault{Status: http.StatusServiceUnavailable}},
			{Name: "registry 429 Retry-After", Path: "/manifests/", Times: 1, Fault: faultproxy.Fault{Status: http.StatusTooManyRequests, RetryAfter: "1"}},
			{Name: "registry reset", Methods: []string{http.MethodGet}, Path: "/blobs/", Times: 2, Fault: faultproxy.Fault{Reset: true}},
			{Name: "registry EOF mid-body", Methods: []string{http.MethodGet}, Path: "/blobs/", Times: 1, Fault: faultproxy.Fault{Cut: true}},
			{Name: "registry stalled body", Methods: []string{http.MethodGet}, Path: "/blobs/", Times: 1, Fault: faultproxy.Fault{StallBody: 4 * time.Second}},
			{Name: "registry 500 on upload", Methods: []string{http.MethodPut}, Path: "/blobs/uploads/", Times: 1, Fault: faultproxy.Fault{Status: http.StatusInternalServerError}},
		})
	d.index.SetLatency(20 * time.Millisecond)
	d.registry.SetLatency(5 * time.Millisecond)
	start := time.Now()
	out, err := Run(ctx, d.imgs, d.stages(t))
	if err != nil {
		t.Fatalf("Run() through transient faults = %v", err)
	}
	t.Logf("release through the faults: %s, %d index and %d registry requests", time.Since(start).Round(time.Millisecond), d.index.Requests(), d.registry.Requests())
	if oc := out[0]; oc.Result == nil || !oc.Result.Passed || oc.Promoted.Reference == "" {
		t.Fatalf("release = %+v, want verified and promoted", oc)
	}
	for _, p := range []struct {
		proxy *faultproxy.Proxy
		rules []string
	}{
		{d.index, []string{"index reset", "index 502 once per path", "build's wheel reset", "build's wheel 502 once per path"}},
		{d.registry, []string{"registry 503 burst", "registry 429 Retry-After", "registry reset", "registry EOF mid-body", "registry stalled body", "registry 500 on upload"}},
	} {
		for _, r := range p.rules {
			if p.proxy.Fired(r) == 0 {
				t.Errorf("the fault %q never fired: the release did not meet it", r)
			}
		}
	}
	if n := d.index.Fired("index 502 once per path"); n < 5 {
		t.Errorf("the index answered 502 to %d paths, want every path the release asked (at least 5)", n)
	}
	// demo-core, demo-util and demo-dep (this run's own); the pip wheel
	// too unless buildkitd has it cached from another build.
	if n := d.index.Fired("build's wheel 502 once per path"); n < 3 {
		t.Errorf("the index answered the build's buildkitd 502 for %d wheels, want every demo wheel (3)", n)
	}
}

// TestReleaseFailsClearlyOnPermanentFaults: a fault that does not go
// away fails the release at the stage that meets it, with an error that
// names the host and what failed, and the exit code a CI job can act on:
// 69 for an index or registry that keeps answering 503 or never answers,
// 77 for a registry that refuses the credentials.
func TestReleaseFailsClearlyOnPermanentFaults(t *testing.T) {
	for _, tc := range []struct {
		name            string
		index, registry []faultproxy.Rule
		host            func(d *faultyDemo) string
		want            []string
		code            int
	}{
		{
			name:  "index 503 for good",
			index: []faultproxy.Rule{{Name: "down", Fault: faultproxy.Fault{Status: http.StatusServiceUnavailable}}},
			host:  func(d *faultyDemo) string { return d.index.Addr() },
			want:  []string{"HTTP 503", "tries"},
			code:  exitcode.Unavailable,
		},
		{
			name:  "index stalls beyond the timeout",
			index: []faultproxy.Rule{{Name: "down", Fault: faultproxy.Fault{StallHeader: time.Minute}}},
			host:  func(d *faultyDemo) string { return d.index.Addr() },
			want:  []string{auth.PhaseResponse, "--response-timeout"},
			code:  exitcode.Unavailable,
		},
		{
			name:     "registry 503 for good",
			registry: []faultproxy.Rule{{Name: "down", Fault: faultproxy.Fault{Status: http.StatusServiceUnavailable}}},
			host:     func(d *faultyDemo) string { return d.registry.Addr() },
			want:     []string{"HTTP 503", "tries"},
			code:     exitcode.Unavailable,
		},
		{
			name:     "registry refuses the credentials",
			registry: []faultproxy.Rule{{Name: "down", Fault: faultproxy.Fault{Status: http.StatusUnauthorized}}},
			host:     func(d *faultyDemo) string { return d.registry.Addr() },
			want:     []string{"credentials tried"},
			code:     exitcode.AuthFailed,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			d := newFaultyDemo(t, ctx, "e2e-permanent", tc.index, tc.registry)
			_, err := Run(ctx, d.imgs, d.stages(t))
			if err == nil {
				t.Fatalf("Run() with %s succeeded", tc.name)
			}
			t.Logf("Run() with %s: exit %d: %v", tc.name, exitcode.Code(err), err)
			host := tc.host(d)
			for _, w := range append(tc.want, host) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run() with %s = %v\nwant it to say %q", tc.name, err, w)
				}
			}
			if got := exitcode.Code(err); got != tc.code {
				t.Errorf("Run() with %s: exit %d, want %d (%v)", tc.name, got, tc.code, err)
			}
			if tc.code == exitcode.AuthFailed {
				var ae *auth.Error
				if !errors.As(err, &ae) || ae.Host != host {
					t.Errorf("Run() with %s = %v, want an *auth.Error for %s", tc.name, err, host)
				}
			}
		})
	}
}
