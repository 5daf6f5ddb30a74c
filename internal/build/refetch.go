package build

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/solver/errdefs"
	digest "github.com/opencontainers/go-digest"

	"imagectl/internal/auth"
	"imagectl/internal/logs"
)

// buildkitd's HTTP source (v0.34.2, source/http/source.go) fetches a
// locked artifact once, without retries, and with a pinned checksum it
// never looks at the status: Snapshot hashes whatever body came back (a
// 502's error page too) and fails with "digest mismatch sha256:GOT:
// sha256:WANT"; a reset or EOF fails the copy. Both reach the client as
// text on the VertexError of the source op, so the text cannot tell a CDN
// hiccup from a file that changed on the mirror.
//
// solveRefetching therefore decides from the URL itself: when a solve
// fails on the fetch of a locked artifact, imagectl fetches that URL once
// more through its own transport (auth's timeouts and retries, the index
// credential) and hashes it (checkFetch):
//   - the locked sha256: the failure was transient, and the target is
//     solved again after a backoff (Network.Backoff, doubling with
//     jitter, up to Network.MaxBackoff), as long as no artifact failed in
//     Network.Attempts solves: each fetch gets the tries a request gets
//     from auth's transport. BuildKit's cache keeps what the failed solve
//     completed (the other fetches, the steps before), so a re-solve
//     fetches what failed and what depends on it;
//   - another sha256: a *ChecksumError naming what the URL serves now;
//   - an answer that is not 200 (a 404, a 5xx that outlasted the tries,
//     a stall): a *FetchError wrapping the check's error, with its exit
//     code (69 for a host that stays unavailable);
//   - no answer at all (the host does not resolve or refuses from here;
//     a remote builder may reach what this machine cannot): BuildKit's
//     own error, mapped as before (mapSolveError).
//
// The fault-free path is unchanged: one solve, no check.

// solveRefetching solves t on c as solveTarget does, solving it again when
// the solve failed on a transient fetch of a locked artifact (see above).
// Every solve's status goes to status, which it closes when it returns.
// Its error is already mapped to a *ChecksumError or *FetchError when a
// fetch failed.
func solveRefetching(ctx context.Context, c Client, o *options, sopt client.SolveOpt, t buildTarget, status chan *client.SolveStatus, arts map[digest.Digest]Artifact) (*client.SolveResponse, error) {
	if status != nil {
		defer close(status)
	}
	net := o.access.Network()
	// The failed solves of each artifact, and its backoff.
	failed := map[string]int{}
	backoffs := map[string]*backoff.ExponentialBackOff{}
	log := logs.From(ctx)
	for solves := 1; ; solves++ {
		ch, relayed := relayStatus(status)
		resp, err := solveTarget(ctx, c, o, sopt, t, ch)
		relayed()
		if err == nil {
			return resp, nil
		}
		a, ok := failedFetch(err, arts)
		if !ok || ctx.Err() != nil {
			return nil, mapSolveError(err, arts)
		}
		failed[a.URL]++
		verdict := checkFetch(ctx, o.access, a)
		switch {
		case verdict.unreachable != nil:
			log.Debug("could not check the failed fetch from here", "artifact", a.String(), "url", auth.Redact(a.URL), "err", verdict.unreachable)
			return nil, mapSolveError(err, arts)
		case verdict.err != nil:
			return nil, &FetchError{Artifact: a, Err: verdict.err}
		case verdict.got != a.digest():
			return nil, &ChecksumError{Artifact: a, Want: a.digest().String(), Got: verdict.got.String(), Err: err}
		case failed[a.URL] >= net.Attempts:
			return nil, &FetchError{Artifact: a, Err: fmt.Errorf("buildkitd failed it in %d solves, though the URL serves the locked file (the last failure: %w)", failed[a.URL], err)}
		}
		b := backoffs[a.URL]
		if b == nil {
			b = backoff.NewExponentialBackOff()
			b.InitialInterval, b.Multiplier, b.RandomizationFactor, b.MaxInterval = net.Backoff, 2, 0.5, net.MaxBackoff
			backoffs[a.URL] = b
		}
		wait := b.NextBackOff()
		log.Warn("a fetch failed in the build but the URL serves the locked file: solving again", "image", t.lock.Name,
			"platform", platformString(t.platform), "artifact", a.String(), "failed", failed[a.URL], "of", net.Attempts, "solve", solves+1, "after", wait, "err", err)
		tm := time.NewTimer(wait)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return nil, mapSolveError(err, arts)
		}
	}
}

// relayStatus returns a channel for one solve (BuildKit's client closes
// it) whose statuses go on to status; relayed waits until it is drained.
// Without status both are no-ops.
func relayStatus(status chan *client.SolveStatus) (ch chan *client.SolveStatus, relayed func()) {
	if status == nil {
		return nil, func() {}
	}
	ch = make(chan *client.SolveStatus)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range ch {
			status <- s
		}
	}()
	return ch, func() { <-done }
}

// failedFetch is the locked artifact whose HTTP source op err (a solve's
// error) names in its VertexError, if any: BuildKit keeps that detail
// typed across gRPC.
func failedFetch(err error, arts map[digest.Digest]Artifact) (Artifact, bool) {
	var ve *errdefs.VertexError
	if !errors.As(err, &ve) {
		return Artifact{}, false
	}
	a, ok := arts[digest.Digest(ve.Digest)]
	return a, ok
}

func (a Artifact) digest() digest.Digest {
	d, err := sha256Digest(a.SHA256)
	if err != nil {
		return ""
	}
	return d
}

// fetchVerdict is what the URL of a failed fetch serves now: the sha256 of
// its 200 body (got); or err, an answer that is not the file (a status
// other than 200 once the transport's tries ran out, a stall, a cut body);
// or unreachable, no answer at all from here.
type fetchVerdict struct {
	got         digest.Digest
	err         error
	unreachable error
}

// checkFetch GETs a's URL through a's index transport (its timeouts and
// retries, and the index credential for the host, as the build's auth
// secret sends it) and hashes the body.
func checkFetch(ctx context.Context, a *auth.Access, art Artifact) fetchVerdict {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, art.URL, nil)
	if err != nil {
		return fetchVerdict{unreachable: err}
	}
	if h := a.AuthHeader(art.URL); h != "" {
		req.Header.Set("Authorization", h)
	}
	resp, err := a.HTTPClient().Do(req)
	if err != nil {
		if answered(err) {
			return fetchVerdict{err: err}
		}
		return fetchVerdict{unreachable: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if auth.Denied(resp.StatusCode) {
			return fetchVerdict{err: &auth.Error{Kind: "index", Host: req.URL.Host, Status: resp.StatusCode, Source: a.IndexSource(art.URL)}}
		}
		return fetchVerdict{err: fmt.Errorf("index %s answered GET %s with HTTP %d %s", req.URL.Host, req.URL.Path, resp.StatusCode, http.StatusText(resp.StatusCode))}
	}
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return fetchVerdict{err: fmt.Errorf("reading %s: %w", auth.Redact(art.URL), err)}
	}
	return fetchVerdict{got: digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil))}
}

// answered reports whether a failed request's error is the host's answer
// (a status that outlasted the tries, a stall or cut once connected), as
// opposed to no answer at all (no such host, refused, untrusted).
func answered(err error) bool {
	var se *auth.StatusError
	var ne *auth.NetError
	return errors.As(err, &se) || (errors.As(err, &ne) && ne.Phase != auth.PhaseConnect && ne.Phase != auth.PhaseTLS)
}
