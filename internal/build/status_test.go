package build

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
)

// reportingClient sends n statuses on the solve's channel, then closes it
// and answers with digest; with cancel, it cancels the solve after the
// statuses and answers with ctx's error once ctx ends.
type reportingClient struct {
	n      int
	cancel context.CancelFunc
	digest string
}

func (r *reportingClient) Build(ctx context.Context, _ client.SolveOpt, _ string, _ gateway.BuildFunc, ch chan *client.SolveStatus) (*client.SolveResponse, error) {
	if ch != nil {
		defer close(ch)
		for range r.n {
			ch <- &client.SolveStatus{Vertexes: []*client.Vertex{{Name: "step"}}}
		}
	}
	if r.cancel != nil {
		r.cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &client.SolveResponse{ExporterResponse: map[string]string{exptypes.ExporterImageDigestKey: r.digest}}, nil
}

// TestSolveClosesStatusOnce: whichever way Solve ends, WithStatus's channel
// gets every status the solves reported and is closed once (a second close
// panics) by the time Solve returns.
func TestSolveClosesStatusOnce(t *testing.T) {
	reg := fakeRegistry(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	noStaging := localLock(reg)
	noStaging.Repos.Staging = ""
	cancelled, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		c        Client
		opts     []Option
		statuses int
		wantErr  bool
	}{
		{name: "bad option", c: &reportingClient{n: 3}, opts: []Option{WithCacheFrom("ref=no-type")}, wantErr: true},
		{name: "no init binary", c: &reportingClient{n: 3}, opts: []Option{WithInit(t.TempDir() + "/missing")}, wantErr: true},
		{name: "nothing to push to", c: &reportingClient{n: 3}, opts: []Option{WithPush(true)}, wantErr: true},
		{name: "registry down", c: &reportingClient{n: 3}, opts: []Option{WithPush(true), WithDialTimeout(time.Second)}, wantErr: true},
		{name: "solve fails", c: &fakeClient{err: errors.New("boom")}, wantErr: true},
		{name: "solve cancelled", ctx: cancelled, c: &reportingClient{n: 2, cancel: cancel}, statuses: 2, wantErr: true},
		{name: "solved", c: &reportingClient{n: 5, digest: "sha256:" + sum("img")}, statuses: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := localLock(reg)
			switch tc.name {
			case "nothing to push to":
				l = noStaging
			case "registry down":
				l = localLock(dead)
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			ch := make(chan *client.SolveStatus)
			got := make(chan int, 1)
			go func() {
				n := 0
				for range ch {
					n++
				}
				got <- n
			}()
			opts := append([]Option{fakeInit(t), WithStatus(ch)}, tc.opts...)
			_, err := Solve(ctx, tc.c, l, opts...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Solve() = %v, want an error: %v", err, tc.wantErr)
			}
			select {
			case n := <-got:
				if n != tc.statuses {
					t.Errorf("the status channel carried %d statuses, want %d", n, tc.statuses)
				}
			case <-time.After(time.Second):
				t.Fatal("the status channel is still open a second after Solve returned")
			}
		})
	}
}
