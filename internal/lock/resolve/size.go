package resolve

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
)

// fillSizes sets each wheel's Size from a HEAD request on its URL, a few at
// a time.
func fillSizes(ctx context.Context, a *auth.Access, ws []lock.Wheel) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 8)
	)
	for i := range ws {
		wg.Add(1)
		go func(w *lock.Wheel) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			n, err := headSize(ctx, a, w.URL)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = fmt.Errorf("size of %s %s: %w", w.Name, w.Version, err)
				}
				return
			}
			w.Size = n
		}(&ws[i])
	}
	wg.Wait()
	return first
}

// headSize sends a HEAD with the index credential for the URL's host: a
// 401/403 is an *auth.Error naming the index and the credential source.
func headSize(ctx context.Context, a *auth.Access, u string) (int64, error) {
	resp, err := a.CheckIndex(ctx, u)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HEAD %s: %s", auth.Redact(u), resp.Status)
	}
	if resp.ContentLength <= 0 {
		return 0, fmt.Errorf("HEAD %s: no Content-Length", auth.Redact(u))
	}
	return resp.ContentLength, nil
}
