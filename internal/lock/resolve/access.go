package resolve

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"imagectl/internal/auth"
)

// moveIndexCredentials takes user:password@ out of every index URL: the
// credential goes to o.access for that host:port (so pip, the size requests
// and the build's fetches get it), the URL without it goes to pip and the
// lock.
func (o *options) moveIndexCredentials(image string, indexes []string) ([]string, error) {
	out := make([]string, 0, len(indexes))
	for _, ix := range indexes {
		u, err := url.Parse(ix)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("image %s: pip index %q is not a URL", image, auth.Redact(ix))
		}
		clean, cred, err := auth.SplitUserinfo(ix)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", image, err)
		}
		if cred != nil {
			o.access = o.access.WithIndexCredential(u.Host, *cred)
		}
		out = append(out, clean)
	}
	return out, nil
}

// checkIndexes asks every index once, with its credential, before pip
// runs: a 401/403 is an *auth.Error naming the index and the credential
// source (pip would only print a prompt it cannot answer). Other failures
// are left to pip, which reports them with its own words.
func checkIndexes(ctx context.Context, a *auth.Access, indexes []string) error {
	for _, ix := range indexes {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := a.CheckIndex(cctx, ix)
		cancel()
		var ae *auth.Error
		if errors.As(err, &ae) {
			return err
		}
	}
	return nil
}
