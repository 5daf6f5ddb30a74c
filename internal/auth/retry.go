package auth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// retrying sends a replayable request (no body, or one GetBody can make
// again: every GET and HEAD, a manifest PUT, a token exchange) again when
// it fails transiently (Transient; TransientStatus), with exponential
// backoff and jitter (cenkalti/backoff), at most Network.Attempts times,
// waiting a 429's or 503's Retry-After instead when the server gives one
// no longer than MaxBackoff. A cancelled context stops the waiting at
// once. When the tries run out, the last failure comes back as a
// permanent error: a *NetError with Attempts set, or a *StatusError
// (exit 69) for a status that never went away. A request it cannot replay
// (a streamed blob upload) is sent once and left to the caller's retry
// (ggcr's, around the whole upload).
type retrying struct {
	kind  string
	inner http.RoundTripper
	net   Network
}

func replayable(r *http.Request) bool {
	return r.Body == nil || r.Body == http.NoBody || r.GetBody != nil
}

func (t *retrying) RoundTrip(r *http.Request) (*http.Response, error) {
	if !replayable(r) || t.net.Attempts <= 1 {
		return t.inner.RoundTrip(r)
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.Multiplier, b.RandomizationFactor, b.MaxInterval = t.net.Backoff, 2, 0.5, t.net.MaxBackoff
	tries := 0
	var last *http.Response
	op := func() (*http.Response, error) {
		tries++
		req := r
		if tries > 1 && r.GetBody != nil {
			body, err := r.GetBody()
			if err != nil {
				return nil, backoff.Permanent(err)
			}
			req = r.Clone(r.Context())
			req.Body = body
		}
		resp, err := t.inner.RoundTrip(req)
		if err != nil {
			if !Transient(err) || r.Context().Err() != nil {
				return nil, backoff.Permanent(err)
			}
			return nil, err
		}
		if !TransientStatus(resp.StatusCode) {
			return resp, nil
		}
		// Keep the answer for the caller when the tries run out, but free
		// its connection while waiting.
		last = drained(resp)
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), t.net.MaxBackoff); ok {
			return nil, &backoff.RetryAfterError{Duration: d}
		}
		return nil, errStatus
	}
	resp, err := backoff.Retry(r.Context(), op, backoff.WithBackOff(b), backoff.WithMaxTries(uint(t.net.Attempts)), backoff.WithMaxElapsedTime(0))
	if err == nil {
		return t.resumable(r, resp, b, tries), nil
	}
	if r.Context().Err() != nil {
		return nil, err
	}
	var ra *backoff.RetryAfterError
	if errors.Is(err, errStatus) || errors.As(err, &ra) {
		if last == nil {
			return nil, err
		}
		return nil, &StatusError{Kind: t.kind, Host: r.URL.Host, Method: r.Method, Path: r.URL.Path, Status: last.StatusCode, Attempts: tries}
	}
	var ne *NetError
	if tries > 1 && errors.As(err, &ne) && ne.Attempts == 0 {
		c := *ne
		c.Attempts = tries
		return nil, &c
	}
	return nil, err
}

var errStatus = errors.New("transient status")

// resumable lets a GET's 200 body that breaks off transiently (a reset,
// EOF mid-body, an idle timeout) go on where it stopped: the rest is asked
// for with Range and If-Range (the response's ETag, else its
// Last-Modified), so a file that changed in between is never stitched to
// the part already read: the server then answers 200, and the read fails
// with the break. A body without a validator or a length is not resumed.
func (t *retrying) resumable(r *http.Request, resp *http.Response, b backoff.BackOff, tries int) *http.Response {
	if r.Method != http.MethodGet || resp.StatusCode != http.StatusOK || r.Header.Get("Range") != "" || resp.ContentLength <= 0 {
		return resp
	}
	v := resp.Header.Get("ETag")
	if v == "" || strings.HasPrefix(v, "W/") {
		v = resp.Header.Get("Last-Modified")
	}
	if v == "" {
		return resp
	}
	resp.Body = &resumingBody{t: t, req: r, body: resp.Body, size: resp.ContentLength, validator: v, b: b, tries: tries}
	return resp
}

type resumingBody struct {
	t         *retrying
	req       *http.Request
	body      io.ReadCloser
	off, size int64
	validator string
	b         backoff.BackOff
	tries     int
}

func (rb *resumingBody) Read(p []byte) (int, error) {
	for {
		n, err := rb.body.Read(p)
		rb.off += int64(n)
		if err == io.EOF && rb.off < rb.size {
			err = &NetError{Kind: rb.t.kind, Host: rb.req.URL.Host, Phase: PhaseBody, Err: io.ErrUnexpectedEOF}
		}
		if err == nil || err == io.EOF || !Transient(err) || rb.tries >= rb.t.net.Attempts || rb.req.Context().Err() != nil {
			var ne *NetError
			if err != nil && rb.tries > 1 && errors.As(err, &ne) && ne.Attempts == 0 {
				c := *ne
				c.Attempts = rb.tries
				err = &c
			}
			return n, err
		}
		if !rb.resume() {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// resume asks for the rest of the body after a backoff; false when the
// server cannot give the same file's rest.
func (rb *resumingBody) resume() bool {
	rb.body.Close()
	rb.body = http.NoBody
	d := rb.b.NextBackOff()
	if d == backoff.Stop {
		return false
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-rb.req.Context().Done():
		return false
	}
	rb.tries++
	req := rb.req.Clone(rb.req.Context())
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-", rb.off))
	req.Header.Set("If-Range", rb.validator)
	resp, err := rb.t.inner.RoundTrip(req)
	if err != nil {
		return false
	}
	want := fmt.Sprintf("bytes %d-%d/%d", rb.off, rb.size-1, rb.size)
	if resp.StatusCode != http.StatusPartialContent || resp.Header.Get("Content-Range") != want {
		resp.Body.Close()
		return false
	}
	rb.body = resp.Body
	return true
}

func (rb *resumingBody) Close() error { return rb.body.Close() }

// drained reads a little of resp's body (an error message), closes it and
// returns resp without one.
func drained(resp *http.Response) *http.Response {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
	resp.Body = http.NoBody
	return resp
}
