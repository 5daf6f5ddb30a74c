package monitoring

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// WriteTextfile writes what g gathers to path in the exposition format,
// for node_exporter's textfile collector: a temp file beside path, mode
// 0644, renamed over it (a scrape never sees half a file).
func WriteTextfile(path string, g prometheus.Gatherer) error {
	if err := prometheus.WriteToTextfile(path, g); err != nil {
		return fmt.Errorf("writing metrics to %s: %w", path, err)
	}
	return nil
}

// PushOption configures Push.
type PushOption func(*pushOptions)

type pushOptions struct {
	timeout  time.Duration
	attempts int
	backoff  time.Duration
	client   *http.Client
}

// WithPushTimeout bounds each attempt (connect, send, answer). The default
// is 30s.
func WithPushTimeout(d time.Duration) PushOption { return func(o *pushOptions) { o.timeout = d } }

// WithPushAttempts sets how many times a transient failure (a connection
// error, 429, 5xx) is tried in all, with backoff between attempts (doubling
// from 1s by default). The default is 4.
func WithPushAttempts(n int, backoff time.Duration) PushOption {
	return func(o *pushOptions) { o.attempts, o.backoff = n, backoff }
}

// Push replaces job's metrics on the Pushgateway at url (PUT: metrics of
// an earlier push that are gone now are gone there too) with what g
// gathers.
func Push(ctx context.Context, url, job string, g prometheus.Gatherer, opts ...PushOption) error {
	o := pushOptions{timeout: 30 * time.Second, attempts: 4, backoff: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.attempts < 1 {
		o.attempts = 1
	}
	c := o.client
	if c == nil {
		c = &http.Client{Timeout: o.timeout}
	}
	doer := &retryDoer{ctx: ctx, client: c, attempts: o.attempts, backoff: o.backoff}
	if err := push.New(url, job).Client(doer).Gatherer(g).PushContext(ctx); err != nil {
		return fmt.Errorf("pushing metrics to %s (job %s): %w", url, job, err)
	}
	return nil
}

// retryDoer retries a request on a transient failure: a transport error
// (not the caller's cancel), 429 or a 5xx; anything else is the answer.
type retryDoer struct {
	ctx      context.Context
	client   *http.Client
	attempts int
	backoff  time.Duration
}

func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	wait := d.backoff
	// A body that cannot be read again cannot be sent again.
	canRetry := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for i := 1; ; i++ {
		if i > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("rewinding the request body: %w", err)
			}
			req.Body = body
		}
		resp, err := d.client.Do(req)
		transient := false
		switch {
		case err != nil:
			transient = d.ctx.Err() == nil && !errors.Is(err, context.Canceled)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			transient = true
		}
		if !transient || i >= d.attempts || !canRetry {
			return resp, err
		}
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		select {
		case <-d.ctx.Done():
			return nil, d.ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}
