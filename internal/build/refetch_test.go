package build

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	"github.com/moby/buildkit/solver/errdefs"
	"github.com/moby/buildkit/util/grpcerrors"
	digest "github.com/opencontainers/go-digest"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
)

// flakyClient fails its first `fails` solves (all when fails < 0) with
// err, or with errs in turn, sent through the gRPC codec as buildkitd
// sends it, then answers with digest; each solve reports one status and
// closes its channel.
type flakyClient struct {
	fails  int
	err    error
	errs   []error
	digest string

	mu     sync.Mutex
	solves int
}

func (f *flakyClient) Build(_ context.Context, _ client.SolveOpt, _ string, _ gateway.BuildFunc, ch chan *client.SolveStatus) (*client.SolveResponse, error) {
	f.mu.Lock()
	f.solves++
	n := f.solves
	f.mu.Unlock()
	if ch != nil {
		ch <- &client.SolveStatus{Vertexes: []*client.Vertex{{Name: fmt.Sprintf("solve %d", n)}}}
		close(ch)
	}
	if f.fails < 0 || n <= f.fails {
		err := f.err
		if len(f.errs) > 0 {
			err = f.errs[(n-1)%len(f.errs)]
		}
		return nil, grpcerrors.FromGRPC(grpcerrors.ToGRPC(context.Background(), err))
	}
	return &client.SolveResponse{ExporterResponse: map[string]string{exptypes.ExporterImageDigestKey: f.digest}}, nil
}

// TestSolveRefetchesTransientFetchFailures: a solve that fails on the
// fetch of a locked wheel is solved again only when the wheel's URL,
// fetched by imagectl itself, serves the locked file (a 502's body that
// buildkitd hashed, a reset: both reach the client as text); a URL that
// serves another file is a *ChecksumError naming what it serves, one that
// answers 404 or keeps answering 503 a *FetchError (the 503 with exit 69),
// and a fetch that fails in every solve though the URL is fine stops
// after Network.Attempts solves; the bound is each artifact's (two wheels
// failing in turn get more solves in all). A failure that is no fetch is
// never solved again. Every solve's status reaches WithStatus's channel, closed once.
func TestSolveRefetchesTransientFetchFailures(t *testing.T) {
	const locked = "the locked wheel (demo-util and demo-core serve it)"
	served := map[string]string{} // case -> body of demo-util's URL
	var gets atomic.Int32
	var mu sync.Mutex
	var current string
	idx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			return
		}
		gets.Add(1)
		mu.Lock()
		c := current
		mu.Unlock()
		switch body := served[c]; body {
		case "404":
			http.NotFound(w, r)
		case "503":
			http.Error(w, "upstream down", http.StatusServiceUnavailable)
		default:
			fmt.Fprint(w, body)
		}
	}))
	defer idx.Close()
	reg := fakeRegistry(t)
	l := localLock(reg)
	for i := range l.Pip {
		l.Pip[i].URL = idx.URL + "/files/" + l.Pip[i].Filename
		if l.Pip[i].Name == "demo-util" || l.Pip[i].Name == "demo-core" {
			l.Pip[i].SHA256 = sum(locked)
		}
	}
	dgst, _ := pushRandom(t, l.Repos.Staging, 2)
	def, err := Definition(context.Background(), l, fakeInit(t))
	if err != nil {
		t.Fatal(err)
	}
	arts, err := Artifacts(def.ToPB(), l)
	if err != nil {
		t.Fatal(err)
	}
	var utilVtx, coreVtx digest.Digest
	for d, a := range arts {
		switch a.Name {
		case "demo-util":
			utilVtx = d
		case "demo-core":
			coreVtx = d
		}
	}
	if utilVtx == "" || coreVtx == "" {
		t.Fatalf("Artifacts() = %v, no vertex for demo-util", arts)
	}
	access, err := auth.New(auth.Config{Network: auth.Network{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	// What buildkitd v0.34.2 answers: a 502's page hashed, and a reset.
	mismatch := errdefs.WrapVertex(fmt.Errorf("digest mismatch sha256:%s: sha256:%s", sum("<html>502 Bad Gateway</html>"), sum(locked)), utilVtx)
	reset := errdefs.WrapVertex(errors.New("read tcp 127.0.0.1:40000->127.0.0.1:8080: read: connection reset by peer"), utilVtx)
	coreReset := errdefs.WrapVertex(errors.New("Get \"http://127.0.0.1:8080/files/demo_core.whl\": EOF"), coreVtx)
	notFetch := errdefs.WrapVertex(errors.New("process \"/bin/sh -c pip install\" did not complete successfully: exit code: 1"), digest.FromString("an exec op"))

	for _, tc := range []struct {
		name       string
		body       string
		c          *flakyClient
		wantSolves int
		wantGets   int32
		check      func(t *testing.T, err error)
	}{
		{name: "502 page hashed once", body: locked, c: &flakyClient{fails: 1, err: mismatch, digest: dgst}, wantSolves: 2, wantGets: 1},
		{name: "reset twice", body: locked, c: &flakyClient{fails: 2, err: reset, digest: dgst}, wantSolves: 3, wantGets: 2},
		{name: "two wheels in turn", body: locked, c: &flakyClient{fails: 4, errs: []error{reset, coreReset}, digest: dgst}, wantSolves: 5, wantGets: 4},
		{
			name: "the file changed upstream", body: "another file", c: &flakyClient{fails: -1, err: mismatch}, wantSolves: 1, wantGets: 1,
			check: func(t *testing.T, err error) {
				var ce *ChecksumError
				if !errors.As(err, &ce) || ce.Artifact.Name != "demo-util" || ce.Got != "sha256:"+sum("another file") || ce.Want != "sha256:"+sum(locked) {
					t.Errorf("Solve() = %v, want a *ChecksumError for demo-util naming what the URL serves", err)
				}
			},
		},
		{
			name: "gone", body: "404", c: &flakyClient{fails: -1, err: mismatch}, wantSolves: 1, wantGets: 1,
			check: func(t *testing.T, err error) {
				var fe *FetchError
				if !errors.As(err, &fe) || fe.Artifact.Name != "demo-util" || !strings.Contains(err.Error(), "HTTP 404") {
					t.Errorf("Solve() = %v, want a *FetchError for demo-util saying HTTP 404", err)
				}
			},
		},
		{
			name: "index down for good", body: "503", c: &flakyClient{fails: -1, err: mismatch}, wantSolves: 1, wantGets: 3,
			check: func(t *testing.T, err error) {
				var se *auth.StatusError
				if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || exitcode.Code(err) != exitcode.Unavailable {
					t.Errorf("Solve() = %v (exit %d), want an *auth.StatusError 503, exit 69", err, exitcode.Code(err))
				}
			},
		},
		{
			name: "buildkitd fails it every time", body: locked, c: &flakyClient{fails: -1, err: reset}, wantSolves: 3, wantGets: 3,
			check: func(t *testing.T, err error) {
				var fe *FetchError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), "in 3 solves") || !strings.Contains(err.Error(), "connection reset") {
					t.Errorf("Solve() = %v, want a *FetchError after 3 solves with buildkitd's last error", err)
				}
			},
		},
		{
			name: "not a fetch", body: locked, c: &flakyClient{fails: -1, err: notFetch}, wantSolves: 1, wantGets: 0,
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "exit code: 1") {
					t.Errorf("Solve() = %v, want buildkitd's error", err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			current, served[tc.name] = tc.name, tc.body
			mu.Unlock()
			gets.Store(0)
			ch := make(chan *client.SolveStatus)
			statuses := make(chan int, 1)
			go func() {
				n := 0
				for range ch {
					n++
				}
				statuses <- n
			}()
			res, err := Solve(context.Background(), tc.c, l, fakeInit(t), WithPush(true), WithAccess(access), WithStatus(ch))
			if tc.check == nil {
				if err != nil || res.Digest != dgst {
					t.Fatalf("Solve() = %v, %v; want %s after the transient fetch failures", res, err, dgst)
				}
			} else {
				if err == nil {
					t.Fatalf("Solve() succeeded, want an error")
				}
				tc.check(t, err)
			}
			if tc.c.solves != tc.wantSolves {
				t.Errorf("buildkitd solved %d times, want %d", tc.c.solves, tc.wantSolves)
			}
			if n := gets.Load(); n != tc.wantGets {
				t.Errorf("imagectl fetched the wheel %d times, want %d", n, tc.wantGets)
			}
			select {
			case n := <-statuses:
				if n != tc.wantSolves {
					t.Errorf("the status channel carried %d statuses, want one per solve (%d)", n, tc.wantSolves)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the status channel is still open after Solve returned")
			}
		})
	}
}
