package lock

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// fillSizes sets each wheel's Size from a HEAD request on its URL, a few at
// a time.
func fillSizes(ctx context.Context, c *http.Client, netrc []byte, ws []Wheel) error {
	creds := parseNetrc(netrc)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 8)
	)
	for i := range ws {
		wg.Add(1)
		go func(w *Wheel) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			n, err := headSize(ctx, c, creds, w.URL)
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

func headSize(ctx context.Context, c *http.Client, creds map[string][2]string, u string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return 0, err
	}
	if pu, err := url.Parse(u); err == nil {
		if cr, ok := creds[pu.Hostname()]; ok {
			req.SetBasicAuth(cr[0], cr[1])
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HEAD %s: %s", u, resp.Status)
	}
	if resp.ContentLength <= 0 {
		return 0, fmt.Errorf("HEAD %s: no Content-Length", u)
	}
	return resp.ContentLength, nil
}

// parseNetrc reads machine/login/password triples from netrc content.
func parseNetrc(b []byte) map[string][2]string {
	out := map[string][2]string{}
	var toks []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		toks = append(toks, strings.Fields(line)...)
	}
	machine, login, pass := "", "", ""
	flush := func() {
		if machine != "" {
			out[machine] = [2]string{login, pass}
		}
		machine, login, pass = "", "", ""
	}
	for i := 0; i < len(toks); i++ {
		next := func() string {
			if i+1 < len(toks) {
				i++
				return toks[i]
			}
			return ""
		}
		switch toks[i] {
		case "machine":
			flush()
			machine = next()
		case "default":
			flush()
		case "login":
			login = next()
		case "password":
			pass = next()
		}
	}
	flush()
	return out
}

var userinfo = regexp.MustCompile(`://[^/\s@]+@`)

// redact removes user:password@ from URLs in tool output.
func redact(s string) string {
	return userinfo.ReplaceAllString(s, "://***@")
}
