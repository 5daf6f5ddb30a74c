package pyindex

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestOnceFollowerOutlivesItsLeader: a caller that joined a flight whose
// starter went away (its context ended) is not failed by the starter's
// error: it runs the fetch again under its own context.
func TestOnceFollowerOutlivesItsLeader(t *testing.T) {
	c := &client{}
	started := make(chan struct{})
	var calls atomic.Int32
	fetch := func(ctx context.Context) (any, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return "cached", nil
	}
	leaderCtx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := c.once(leaderCtx, "k", fetch)
		leader <- err
	}()
	<-started
	follower := make(chan any, 1)
	go func() {
		v, err := c.once(context.Background(), "k", fetch)
		if err != nil {
			follower <- err
			return
		}
		follower <- v
	}()
	time.Sleep(50 * time.Millisecond) // the follower joins the running flight
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Errorf("leader: once() = %v, want context.Canceled", err)
	}
	if got := <-follower; got != "cached" {
		t.Errorf("follower: once() = %v, want the fetch run again under its own context (\"cached\")", got)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("fetch ran %d times, want 2 (the leader's, then the follower's own)", n)
	}
}

// TestOnceSharesOneRun: callers that come while a fetch runs share its
// result; it runs once.
func TestOnceSharesOneRun(t *testing.T) {
	c := &client{}
	release := make(chan struct{})
	var calls atomic.Int32
	fetch := func(context.Context) (any, error) {
		calls.Add(1)
		<-release
		return "v", nil
	}
	got := make(chan any, 4)
	for i := 0; i < 4; i++ {
		go func() {
			v, _ := c.once(context.Background(), "k", fetch)
			got <- v
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	for i := 0; i < 4; i++ {
		if v := <-got; v != "v" {
			t.Errorf("once() = %v, want v", v)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("fetch ran %d times for 4 callers at once, want 1", n)
	}
}
