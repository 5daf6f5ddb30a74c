package build

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	"github.com/moby/buildkit/solver/errdefs"
	"github.com/moby/buildkit/solver/pb"
	"github.com/moby/buildkit/util/grpcerrors"
	digest "github.com/opencontainers/go-digest"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
)

// fakeClient records the solve options and answers with digest, or err.
type fakeClient struct {
	opt    client.SolveOpt
	err    error
	digest string
}

func (f *fakeClient) Build(_ context.Context, opt client.SolveOpt, _ string, _ gateway.BuildFunc, ch chan *client.SolveStatus) (*client.SolveResponse, error) {
	f.opt = opt
	if ch != nil {
		close(ch)
	}
	if f.err != nil {
		return nil, f.err
	}
	return &client.SolveResponse{ExporterResponse: map[string]string{exptypes.ExporterImageDigestKey: f.digest}}, nil
}

// localLock points the unit lock's base and staging repository at reg.
func localLock(reg string) *lock.Lock {
	l := unitLock()
	l.Base.Ref = reg + "/imagectl/debian-base:bookworm"
	l.Repos.Staging = reg + "/imagectl/staging/unit"
	return l
}

// fakeRegistry is ggcr's in-process registry.
func fakeRegistry(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// pushRandom pushes a random image with n layers to repo and returns its digest.
func pushRandom(t *testing.T, repo string, n int64) (string, v1.Image) {
	t.Helper()
	img, err := random.Image(1024, n)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewDigest(repo + "@" + d.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return d.String(), img
}

func TestSolveExporterOptions(t *testing.T) {
	reg := fakeRegistry(t)
	for _, tc := range []struct {
		name  string
		opts  []Option
		attrs map[string]string
	}{
		{"push by digest", []Option{WithPush(true)}, map[string]string{
			"name": reg + "/imagectl/staging/unit", "push": "true", "push-by-digest": "true",
			"rewrite-timestamp": "false", "source-date-epoch": "1700000000", "oci-mediatypes": "true",
		}},
		{"push with tag, rewrite", []Option{WithPush(true), WithTag("candidate"), WithRewriteTimestamp(true)}, map[string]string{
			"name": reg + "/imagectl/staging/unit:candidate", "push": "true",
			"rewrite-timestamp": "true", "source-date-epoch": "1700000000", "oci-mediatypes": "true",
		}},
		{"push, zstd layers", []Option{WithPush(true), WithCompression("zstd")}, map[string]string{
			"name": reg + "/imagectl/staging/unit", "push": "true", "push-by-digest": "true",
			"rewrite-timestamp": "false", "source-date-epoch": "1700000000", "oci-mediatypes": "true",
			"compression": "zstd", "force-compression": "true",
		}},
		{"push, gzip layers forced", []Option{WithPush(true), WithCompression("gzip")}, map[string]string{
			"name": reg + "/imagectl/staging/unit", "push": "true", "push-by-digest": "true",
			"rewrite-timestamp": "false", "source-date-epoch": "1700000000", "oci-mediatypes": "true",
			"compression": "gzip", "force-compression": "true",
		}},
		{"no push", nil, map[string]string{
			"rewrite-timestamp": "false", "source-date-epoch": "1700000000", "oci-mediatypes": "true",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := localLock(reg)
			// a two-layer base + 8 planned layers
			dgst, _ := pushRandom(t, l.Repos.Staging, 10)
			fc := &fakeClient{digest: dgst}
			opts := append([]Option{fakeInit(t)}, tc.opts...)
			r, err := Solve(context.Background(), fc, l, opts...)
			if err != nil {
				t.Fatalf("Solve() error: %v", err)
			}
			if len(fc.opt.Exports) != 1 || fc.opt.Exports[0].Type != client.ExporterImage {
				t.Fatalf("exports = %+v, want one image exporter", fc.opt.Exports)
			}
			if diff := cmp.Diff(tc.attrs, fc.opt.Exports[0].Attrs); diff != "" {
				t.Errorf("image exporter attrs (-want +got):\n%s", diff)
			}
			if r.Digest != dgst {
				t.Errorf("Result.Digest = %q, want the exporter's digest %q", r.Digest, dgst)
			}
			if tc.attrs["push"] != "true" {
				return
			}
			if want := l.Repos.Staging + "@" + dgst; r.Ref != want {
				t.Errorf("Result.Ref = %q, want %q", r.Ref, want)
			}
			var names []string
			var layers int64
			for _, li := range r.Layers {
				names = append(names, li.Name)
				layers += li.Size
			}
			want := []string{"base", "base", "system", "venv", "big:demo-core", "big:nvidia-nccl-cu12", "big:torch", "periphery", "init", "runtime"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("Result.Layers names (-want +got):\n%s", diff)
			}
			if r.Size <= layers || layers < 10*1024 {
				t.Errorf("Result.Size = %d, layers %d: want the manifest, config and layers", r.Size, layers)
			}
		})
	}
}

func TestSolveCacheAndLayout(t *testing.T) {
	reg := fakeRegistry(t)
	fc := &fakeClient{err: errors.New("stop here")}
	dir := t.TempDir()
	_, err := Solve(context.Background(), fc, localLock(reg), fakeInit(t), WithOCILayout(dir),
		WithCacheFrom("type=registry,ref="+reg+"/cache/unit:main"),
		WithCacheTo("type=registry,ref="+reg+"/cache/unit:main,mode=max"))
	if err == nil {
		t.Fatal("Solve() with a failing client succeeded")
	}
	if len(fc.opt.Exports) != 2 || fc.opt.Exports[1].Type != client.ExporterOCI || fc.opt.Exports[1].OutputDir != dir || fc.opt.Exports[1].Attrs["tar"] != "false" {
		t.Errorf("exports = %+v, want the image exporter and an oci layout directory at %s", fc.opt.Exports, dir)
	}
	wantFrom := []client.CacheOptionsEntry{{Type: "registry", Attrs: map[string]string{"ref": reg + "/cache/unit:main"}}}
	wantTo := []client.CacheOptionsEntry{{Type: "registry", Attrs: map[string]string{"ref": reg + "/cache/unit:main", "mode": "max"}}}
	if diff := cmp.Diff(wantFrom, fc.opt.CacheImports); diff != "" {
		t.Errorf("cache imports (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantTo, fc.opt.CacheExports); diff != "" {
		t.Errorf("cache exports (-want +got):\n%s", diff)
	}
}

func TestParseCacheOption(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr bool
	}{
		{"type=registry,ref=r/x:y", false},
		{"type=registry", true},
		{"ref=r/x:y", true},
		{"type=registry,ref", true},
		{`type=local,"src=/a,b"`, false},
	} {
		_, err := ParseCacheOption(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseCacheOption(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
		}
	}
}

// TestChecksumErrorNamesPackage sends BuildKit's own error through the gRPC
// codec, as a real daemon does, and checks that the failing vertex is
// mapped back to its lock entry.
func TestChecksumErrorNamesPackage(t *testing.T) {
	reg := fakeRegistry(t)
	l := localLock(reg)
	def, err := Definition(context.Background(), l, fakeInit(t))
	if err != nil {
		t.Fatal(err)
	}
	arts, err := Artifacts(def.ToPB(), l)
	if err != nil {
		t.Fatal(err)
	}
	var vtx digest.Digest
	var util lock.Wheel
	for d, a := range arts {
		if a.Name == "demo-util" {
			vtx = d
		}
	}
	for _, w := range l.Pip {
		if w.Name == "demo-util" {
			util = w
		}
	}
	if vtx == "" {
		t.Fatalf("Artifacts() = %v, no vertex for demo-util", arts)
	}
	got := "sha256:" + sum("something else")
	// BuildKit words it two ways, depending on where the check fails.
	for _, msg := range []string{
		fmt.Sprintf("digest mismatch for %s: %s (expected: sha256:%s)", util.URL, got, util.SHA256),
		fmt.Sprintf("failed to solve: digest mismatch %s: sha256:%s", got, util.SHA256),
	} {
		wire := grpcerrors.FromGRPC(grpcerrors.ToGRPC(context.Background(), errdefs.WrapVertex(errors.New(msg), vtx)))
		fc := &fakeClient{err: wire}
		_, err = Solve(context.Background(), fc, l, fakeInit(t), WithPush(true))
		var ce *ChecksumError
		if !errors.As(err, &ce) {
			t.Fatalf("Solve() with %q = %v (%T), want a *ChecksumError", msg, err, err)
		}
		if ce.Artifact.Name != "demo-util" || ce.Want != "sha256:"+util.SHA256 || ce.Got != got {
			t.Errorf("ChecksumError = {%v want %s got %s}, want demo-util, lock hash and served hash", ce.Artifact, ce.Want, ce.Got)
		}
		for _, s := range []string{"demo-util", util.SHA256, got} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q does not mention %s", err, s)
			}
		}
	}

	// An error on a vertex that is not a fetch stays as it is.
	other := grpcerrors.FromGRPC(grpcerrors.ToGRPC(context.Background(), errdefs.WrapVertex(errors.New("exit code 1"), digest.FromString("x"))))
	var ce *ChecksumError
	if err := mapSolveError(other, arts); errors.As(err, &ce) {
		t.Errorf("mapSolveError(non-fetch) = %v, want it unchanged", err)
	}
}

// TestIndexDeniedIsAuthError: an index that refuses the credentials (or
// their absence) fails the build with an *auth.Error, exit 77, naming the
// index host and the netrc tried, never the password, whatever the solve
// (which the check runs beside) made of it: the refusal cancels a solve
// still running, and wins over the sha256 mismatch buildkitd reports for
// a refused fetch and over a solve that succeeded from its cache; with the
// credentials the build goes on, and the LLB names the auth-header secret
// by ID only, on that index's fetches only.
func TestIndexDeniedIsAuthError(t *testing.T) {
	const pw = "s3cret-fetch-pw"
	idx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != pw {
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Length", "1")
	}))
	defer idx.Close()
	reg := fakeRegistry(t)
	l := localLock(reg)
	for i := range l.Pip {
		l.Pip[i].URL = idx.URL + "/files/" + l.Pip[i].Filename
	}
	dgst, _ := pushRandom(t, l.Repos.Staging, 9)
	access := func(t *testing.T, password string) (*auth.Access, string) {
		netrc := filepath.Join(t.TempDir(), "netrc")
		if err := os.WriteFile(netrc, []byte("machine 127.0.0.1 login ci password "+password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := auth.New(auth.Config{NetrcFile: netrc})
		if err != nil {
			t.Fatal(err)
		}
		return a, netrc
	}

	t.Run("with the credential", func(t *testing.T) {
		a, _ := access(t, pw)
		fc := &fakeClient{digest: dgst}
		if _, err := Solve(context.Background(), fc, l, fakeInit(t), WithPush(true), WithAccess(a)); err != nil {
			t.Fatalf("Solve() = %v", err)
		}
		ec := &exportingClient{digest: dgst}
		if _, err := Solve(context.Background(), ec, l, fakeInit(t), WithPush(true), WithAccess(a)); err != nil || !ec.exported {
			t.Fatalf("Solve() = %v, exported %v; want the result exported", err, ec.exported)
		}
		def, err := Definition(context.Background(), l, fakeInit(t), WithAccess(a))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, dt := range def.Def {
			if strings.Contains(string(dt), pw) {
				t.Fatalf("the LLB carries the password")
			}
			var op pb.Op
			if err := op.UnmarshalVT(dt); err != nil {
				t.Fatal(err)
			}
			if src := op.GetSource(); src != nil {
				if id := src.Attrs[pb.AttrHTTPAuthHeaderSecret]; id != "" {
					if !strings.HasPrefix(src.Identifier, idx.URL) {
						t.Errorf("%s carries the auth secret %s, want only the index's fetches", src.Identifier, id)
					}
					ids = append(ids, id)
				}
			}
		}
		if len(ids) != len(l.Pip) {
			t.Errorf("auth-header secrets on %d fetches, want one per wheel (%d)", len(ids), len(l.Pip))
		}
		if len(fc.opt.Session) != 2 {
			t.Errorf("session has %d attachables, want the registry auth provider and the secrets", len(fc.opt.Session))
		}
	})
	// What buildkitd answers for a fetch whose index refused: the hash of
	// the refusal's body is not the locked one.
	mismatch := grpcerrors.FromGRPC(grpcerrors.ToGRPC(context.Background(), errdefs.WrapVertex(
		fmt.Errorf("digest mismatch %s: %s", digest.FromString("authentication required"), l.Pip[0].SHA256), digest.FromString("fetch"))))
	for _, tc := range []struct {
		name string
		c    Client
		opts []Option
	}{
		{"solve still running (cancelled)", &blockingClient{}, nil},
		{"solve failed on the refused fetch", &fakeClient{err: mismatch}, nil},
		// Pushed by digest alone, the image may reach the registry first.
		{"solve answered from its cache, push by digest", &exportingClient{digest: dgst}, nil},
		// A tag (or a layout, a cache ref) waits for the check.
		{"solve answered from its cache, tag", &exportingClient{digest: dgst, gated: true}, []Option{WithTag("v1")}},
		{"solve answered from its cache, oci layout", &exportingClient{digest: dgst, gated: true}, []Option{WithPush(false), WithOCILayout(t.TempDir())}},
	} {
		t.Run("with a wrong password, "+tc.name, func(t *testing.T) {
			a, netrc := access(t, "wrong-pw")
			res, err := Solve(context.Background(), tc.c, l, append([]Option{fakeInit(t), WithPush(true), WithAccess(a)}, tc.opts...)...)
			var ae *auth.Error
			host := strings.TrimPrefix(idx.URL, "http://")
			if res != nil || !errors.As(err, &ae) || ae.Host != host || ae.Kind != "index" || ae.Status != http.StatusUnauthorized {
				t.Fatalf("Solve() = %+v, %v; want no result and an index *auth.Error for %s", res, err, host)
			}
			if exitcode.Code(err) != exitcode.AuthFailed {
				t.Errorf("exit code = %d, want %d", exitcode.Code(err), exitcode.AuthFailed)
			}
			if !strings.Contains(err.Error(), netrc) || strings.Contains(err.Error(), "wrong-pw") {
				t.Errorf("error %q: want the netrc path named and no password", err)
			}
			if bc, ok := tc.c.(*blockingClient); ok && !errors.Is(bc.err, context.Canceled) {
				t.Errorf("the solve ended with %v, want it cancelled by the refusal", bc.err)
			}
			if ec, ok := tc.c.(*exportingClient); ok && (!ec.solved || ec.gated && ec.exported) {
				t.Errorf("solved %v, exported %v: want the solve run and its result not exported (tagged, written) after the refusal", ec.solved, ec.exported)
			}
		})
	}
}

// TestIndexCheckedOncePerHost: the index check asks each host once per
// build, however many artifacts and platforms come from it.
func TestIndexCheckedOncePerHost(t *testing.T) {
	var mu sync.Mutex
	heads := map[string]int{}
	idx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heads[r.Method]++
		mu.Unlock()
		w.Header().Set("Content-Length", "1")
	}))
	defer idx.Close()
	reg := fakeRegistry(t)
	l := localLock(reg)
	for i := range l.Pip {
		l.Pip[i].URL = idx.URL + "/files/" + l.Pip[i].Filename
	}
	if len(l.Pip) < 2 {
		t.Fatalf("the unit lock has %d wheels, want several from one host", len(l.Pip))
	}
	dgst, _ := pushRandom(t, l.Repos.Staging, 9)
	if _, err := Solve(context.Background(), &fakeClient{digest: dgst}, l, fakeInit(t), WithPush(true)); err != nil {
		t.Fatalf("Solve() = %v", err)
	}
	if heads[http.MethodHead] != 1 || len(heads) != 1 {
		t.Errorf("index requests %v, want one HEAD for %d wheels from one host", heads, len(l.Pip))
	}

	// Two platforms fetching from the same index: still one HEAD.
	clear(heads)
	l2 := unitLock2()
	l2.Pip = l.Pip
	l2.Platforms[0].Pip = l.Pip
	var targets []buildTarget
	for _, p := range l2.PlatformNames() {
		view, err := l2.ForPlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, buildTarget{lock: view})
	}
	o, err := makeOptions(fakeInit(t))
	if err != nil {
		t.Fatal(err)
	}
	_, wait, release := indexPreflight(context.Background(), targets, o)
	defer release()
	if err := wait(); err != nil {
		t.Fatalf("indexPreflight(two platforms) = %v", err)
	}
	if heads[http.MethodHead] != 1 || len(heads) != 1 {
		t.Errorf("index requests for two platforms %v, want one HEAD", heads)
	}
}

// exportingClient runs the build function against stubGateway and, as
// buildkitd does, exports (pushes) its result only when it returns one.
type exportingClient struct {
	digest           string
	gated            bool // the case expects no export
	solved, exported bool
}

func (e *exportingClient) Build(ctx context.Context, _ client.SolveOpt, _ string, bf gateway.BuildFunc, ch chan *client.SolveStatus) (*client.SolveResponse, error) {
	if ch != nil {
		defer close(ch)
	}
	res, err := bf(ctx, stubGateway{solved: &e.solved})
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("no result")
	}
	e.exported = true
	return &client.SolveResponse{ExporterResponse: map[string]string{exptypes.ExporterImageDigestKey: e.digest}}, nil
}

// stubGateway answers a solve with an empty result and the base's config
// with an empty one, at once (a solve answered from the cache).
type stubGateway struct {
	gateway.Client
	solved *bool
}

func (s stubGateway) Solve(context.Context, gateway.SolveRequest) (*gateway.Result, error) {
	*s.solved = true
	return gateway.NewResult(), nil
}

func (s stubGateway) ResolveImageConfig(context.Context, string, sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	return "", "", []byte("{}"), nil
}

// blockingClient is a solve that runs until its context ends.
type blockingClient struct{ err error }

func (b *blockingClient) Build(ctx context.Context, _ client.SolveOpt, _ string, _ gateway.BuildFunc, ch chan *client.SolveStatus) (*client.SolveResponse, error) {
	if ch != nil {
		defer close(ch)
	}
	<-ctx.Done()
	b.err = ctx.Err()
	return nil, b.err
}

func TestDialUnavailable(t *testing.T) {
	// A listener that accepts and never answers: the dial must time out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, addr := range []string{"unix:///nonexistent/buildkitd.sock", "tcp://" + ln.Addr().String()} {
		t.Run(addr, func(t *testing.T) {
			start := time.Now()
			_, err := Dial(context.Background(), addr, 2*time.Second)
			took := time.Since(start)
			var ue *UnavailableError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), addr) {
				t.Fatalf("Dial(%s) = %v, want an UnavailableError naming the address", addr, err)
			}
			if exitcode.Code(err) != exitcode.Unavailable {
				t.Errorf("exit code = %d, want %d", exitcode.Code(err), exitcode.Unavailable)
			}
			if took > 5*time.Second {
				t.Errorf("Dial(%s) took %v, want the 2s timeout", addr, took)
			}
		})
	}
}

func TestSolveRegistryUnavailable(t *testing.T) {
	// A port with nothing listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	fc := &fakeClient{}
	start := time.Now()
	_, err = Solve(context.Background(), fc, localLock(dead), fakeInit(t), WithPush(true), WithDialTimeout(2*time.Second))
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Service != "registry" || !strings.Contains(err.Error(), dead) {
		t.Fatalf("Solve() to a dead registry = %v, want an UnavailableError naming %s", err, dead)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v, want within the 2s timeout", time.Since(start))
	}
	if fc.opt.Exports != nil {
		t.Errorf("Solve() reached buildkitd although the registry is down")
	}
}

// TestSolveClosesStatusOnBadOption: the CLI waits for the status channel to
// close; a bad option must not leave it open.
func TestSolveClosesStatusOnBadOption(t *testing.T) {
	ch := make(chan *client.SolveStatus)
	_, err := Solve(context.Background(), &fakeClient{}, unitLock(), WithCacheFrom("ref=no-type"), WithStatus(ch), fakeInit(t))
	if err == nil {
		t.Fatal("Solve() with a bad cache option succeeded")
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("status channel received a value, want it closed")
		}
	case <-time.After(time.Second):
		t.Fatal("status channel left open after a failed Solve")
	}
}

func TestWithCompressionRejects(t *testing.T) {
	if _, err := makeOptions(WithCompression("lz4"), fakeInit(t)); err == nil || !strings.Contains(err.Error(), `"lz4"`) {
		t.Errorf("WithCompression(lz4) error = %v, want one naming lz4", err)
	}
}

// TestReadBackReusesTheCheckedTransport: the registry is pinged (and its
// login checked) once per build, before the solve; reading the pushed
// manifest back goes out on the transport that check authenticated, with
// no second /v2/ ping.
func TestReadBackReusesTheCheckedTransport(t *testing.T) {
	var mu sync.Mutex
	var reqs []string
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, r.Method+" "+r.URL.Path)
		mu.Unlock()
		inner.ServeHTTP(w, r)
	}))
	defer s.Close()
	reg := strings.TrimPrefix(s.URL, "http://")
	l := localLock(reg)
	l.Apt, l.Pip, l.Resolver = nil, nil, lock.Wheel{}
	dgst, img := pushRandom(t, l.Repos.Staging, 3)
	mu.Lock()
	reqs = nil
	mu.Unlock()
	res, err := Solve(context.Background(), &fakeClient{digest: dgst}, l, fakeInit(t), WithPush(true))
	if err != nil {
		t.Fatalf("Solve() = %v", err)
	}
	if m, _ := img.Manifest(); len(res.Layers) != len(m.Layers) {
		t.Fatalf("read back %d layers, want %d", len(res.Layers), len(m.Layers))
	}
	var pings, manifests int
	for _, r := range reqs {
		switch {
		case r == "GET /v2/":
			pings++
		case strings.Contains(r, "/manifests/"):
			manifests++
		}
	}
	// The check: ggcr's ping, then /v2/ through the authenticated transport.
	if pings != 2 || manifests != 1 {
		t.Errorf("requests %q: want the check's two /v2/ and one manifest read, no ping of the read-back", reqs)
	}
}
