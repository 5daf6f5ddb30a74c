package pyindex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"imagectl/internal/atomicfile"
	"imagectl/internal/pep"
)

// Stats counts what a Proxy fetched from the upstream indexes.
type Stats struct {
	// Pages and PageBytes are the project pages read.
	Pages, PageBytes int64
	// MetadataFiles and MetadataBytes are PEP 658 metadata files read.
	MetadataFiles, MetadataBytes int64
	// RangeReads and RangeBytes are the HTTP range requests that read a
	// wheel's zip directory and METADATA (index without metadata files).
	RangeReads, RangeBytes int64
	// Downloads and DownloadBytes are whole files read from upstream: a
	// wheel for its metadata from a server without range requests, or a
	// file a client asked for that was not cached yet.
	Downloads, DownloadBytes int64
	// Served and ServedBytes are files the proxy gave its clients (pip,
	// which downloads every wheel it resolved even with --dry-run up to
	// pip 23.0; the resolution step's resolver wheel): from the wheel
	// cache, not counted in Total.
	Served, ServedBytes int64
	// CacheHits are metadata answers served from the cache directory.
	CacheHits int64
}

// Total is every byte fetched from upstream.
func (s Stats) Total() int64 {
	return s.PageBytes + s.MetadataBytes + s.RangeBytes + s.DownloadBytes
}

type counters struct {
	pages, pageBytes, metaFiles, metaBytes, ranges, rangeBytes, downloads, downloadBytes, served, servedBytes, hits atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Pages: c.pages.Load(), PageBytes: c.pageBytes.Load(),
		MetadataFiles: c.metaFiles.Load(), MetadataBytes: c.metaBytes.Load(),
		RangeReads: c.ranges.Load(), RangeBytes: c.rangeBytes.Load(),
		Downloads: c.downloads.Load(), DownloadBytes: c.downloadBytes.Load(),
		Served: c.served.Load(), ServedBytes: c.servedBytes.Load(),
		CacheHits: c.hits.Load(),
	}
}

// client reads upstream indexes with credentials and counts bytes.
type client struct {
	http     *http.Client
	auth     func(*http.Request)
	cacheDir string
	n        counters
	// flight runs one upstream read per key at a time (wheelKey,
	// metadataKey); callers that come while it runs share its result.
	flight singleflight.Group
}

func (c *client) do(req *http.Request) (*http.Response, error) {
	if c.auth != nil {
		c.auth(req)
	}
	return c.http.Do(req)
}

// metadata returns the core metadata (the wheel's .dist-info/METADATA) of
// f, a wheel: from the cache, keyed by the wheel's sha256; else the index's
// own metadata file; else by range requests on the wheel; else by reading
// the whole wheel once (its sha256 checked).
func (c *client) metadata(ctx context.Context, f File) ([]byte, error) {
	if !pep.IsSHA256(f.SHA256) {
		return nil, fmt.Errorf("%s: the index gives no sha256, so its metadata cannot be cached or checked", f.Filename)
	}
	path := filepath.Join(c.cacheDir, "metadata", f.SHA256+".metadata")
	if b, err := os.ReadFile(path); err == nil {
		c.n.hits.Add(1)
		return b, nil
	}
	v, err := c.once(ctx, metadataKey(f.SHA256), func(ctx context.Context) (any, error) {
		if b, err := os.ReadFile(path); err == nil {
			c.n.hits.Add(1) // a flight that just ended cached it
			return b, nil
		}
		var (
			b   []byte
			err error
		)
		if _, serr := c.cached(f.SHA256); serr == nil {
			// A client read the wheel before (pip before 23.2 is offered no
			// metadata): the cached copy has it.
			b, err = c.cachedMetadata(f)
			if err == nil {
				c.n.hits.Add(1)
			}
		} else {
			b, err = c.fetchMetadata(ctx, f)
		}
		if err != nil {
			return nil, err
		}
		if err := atomicfile.Write(path, b, 0o644); err != nil {
			return nil, fmt.Errorf("caching the metadata of %s: %w", f.Filename, err)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// wheelKey and metadataKey name the flights of a wheel's download and of
// its metadata read: a metadata read that must download the whole wheel
// joins the wheel's flight, so it and a client's read of the same wheel
// take it from upstream once between them.
func wheelKey(sum string) string    { return "wheel " + sum }
func metadataKey(sum string) string { return "metadata " + sum }

// once runs fetch under key in c.flight (singleflight): a caller that comes
// while it runs waits for it and shares its result; nothing is kept after
// it ends. fetch gets the context of the caller that started it. A caller
// that only waited and got an error runs fetch once more itself, under its
// own context: the error may be the starter's own (its client went away),
// never another caller's to keep.
func (c *client) once(ctx context.Context, key string, fetch func(context.Context) (any, error)) (any, error) {
	for attempt := 0; ; attempt++ {
		led := false
		ch := c.flight.DoChan(key, func() (any, error) {
			led = true
			return fetch(ctx)
		})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case res := <-ch:
			if res.Err == nil || led || attempt > 0 {
				return res.Val, res.Err
			}
		}
	}
}

// cached returns the cached copy of the wheel with sha256 sum, or an error
// when the cache has none.
func (c *client) cached(sum string) (string, error) {
	path := c.wheelPath(sum)
	_, err := os.Stat(path)
	return path, err
}

func (c *client) fetchMetadata(ctx context.Context, f File) ([]byte, error) {
	if f.Metadata {
		b, err := c.get(ctx, f.URL+".metadata", &c.n.metaFiles, &c.n.metaBytes)
		switch {
		case err == nil:
			if f.MetadataSHA256 != "" {
				if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != f.MetadataSHA256 {
					return nil, fmt.Errorf("%s.metadata: sha256 %x, the index says %s", f.Filename, s, f.MetadataSHA256)
				}
			}
			return b, nil
		case !errors.Is(err, ErrNotFound):
			return nil, err
		}
	}
	return c.wheelMetadata(ctx, f)
}

// get reads a small file.
func (c *client) get(ctx context.Context, u string, n, bytes *atomic.Int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", redactURL(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s: %w", redactURL(u), ErrNotFound)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: HTTP %d", redactURL(u), resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	n.Add(1)
	bytes.Add(int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", redactURL(u), err)
	}
	return b, nil
}

// wheelMetadata reads METADATA out of the wheel at f.URL. It asks for the
// wheel's last block; a server that answers 206 is read by ranges, one that
// answers 200 (no range support: a plain static server) is read whole, once,
// into a temporary file whose sha256 must be the index's.
func (c *client) wheelMetadata(ctx context.Context, f File) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=-%d", blockSize))
	resp, err := c.do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", redactURL(f.URL), err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		m := contentRange.FindStringSubmatch(resp.Header.Get("Content-Range"))
		if m == nil {
			return nil, fmt.Errorf("fetching %s: unreadable Content-Range %q", redactURL(f.URL), resp.Header.Get("Content-Range"))
		}
		start, _ := strconv.ParseInt(m[1], 10, 64)
		total, _ := strconv.ParseInt(m[3], 10, 64)
		tail, err := io.ReadAll(io.LimitReader(resp.Body, blockSize+1))
		c.n.ranges.Add(1)
		c.n.rangeBytes.Add(int64(len(tail)))
		if err != nil {
			return nil, fmt.Errorf("fetching %s: %w", redactURL(f.URL), err)
		}
		if start+int64(len(tail)) != total {
			return nil, fmt.Errorf("fetching %s: the last block is %d bytes at %d of %d", redactURL(f.URL), len(tail), start, total)
		}
		v := validator(resp.Header)
		if v == "" && start > 0 {
			// Nothing tells one version of the file from the next, so
			// blocks read later could come from another upload than the
			// tail: read it whole, once, its sha256 checked.
			resp.Body.Close()
			return c.downloadWhole(ctx, f)
		}
		ra := &rangeReader{ctx: ctx, c: c, url: f.URL, size: total, tailOff: start, tail: tail, validator: v, blocks: map[int64][]byte{}}
		return pep.WheelMetadata(ra, total, f.Filename)
	case http.StatusOK:
		return c.downloadMetadata(ctx, resp.Body, f)
	case http.StatusNotFound:
		return nil, fmt.Errorf("%s: %w", redactURL(f.URL), ErrNotFound)
	default:
		return nil, fmt.Errorf("fetching %s: HTTP %d", redactURL(f.URL), resp.StatusCode)
	}
}

// validator is what If-Range can name of a response: its strong ETag,
// else its Last-Modified; "" when it has neither.
func validator(h http.Header) string {
	if v := h.Get("ETag"); v != "" && !strings.HasPrefix(v, "W/") {
		return v
	}
	return h.Get("Last-Modified")
}

// downloadWhole reads f whole into the cache (its sha256 checked) and
// takes its metadata from there.
func (c *client) downloadWhole(ctx context.Context, f File) ([]byte, error) {
	if _, err := c.wheel(ctx, f); err != nil {
		return nil, err
	}
	return c.cachedMetadata(f)
}

func (c *client) downloadMetadata(ctx context.Context, body io.Reader, f File) ([]byte, error) {
	_, err := c.once(ctx, wheelKey(f.SHA256), func(context.Context) (any, error) {
		if path, err := c.cached(f.SHA256); err == nil {
			return path, nil
		}
		return c.storeWheel(body, f, nil)
	})
	if err != nil {
		return nil, err
	}
	return c.cachedMetadata(f)
}

// cachedMetadata reads METADATA out of the cached copy of f.
func (c *client) cachedMetadata(f File) ([]byte, error) {
	fh, err := os.Open(c.wheelPath(f.SHA256))
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	return pep.WheelMetadata(fh, st.Size(), f.Filename)
}

// wheelPath is where the wheel with sha256 sum is cached.
func (c *client) wheelPath(sum string) string {
	return filepath.Join(c.cacheDir, "wheels", sum+".whl")
}

// storeWheel writes body to the wheel cache if its sha256 is the index's,
// and returns the cached file. With tee, the bytes go there too as they
// are read (one pass: read, hash, cache, send); a failed write to tee fails
// the store. It runs in the wheel's flight.
func (c *client) storeWheel(body io.Reader, f File, tee io.Writer) (string, error) {
	dir := filepath.Join(c.cacheDir, "wheels")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	dst := io.MultiWriter(tmp, h)
	if tee != nil {
		dst = io.MultiWriter(tmp, h, tee)
	}
	n, err := io.CopyBuffer(dst, body, make([]byte, 1<<20))
	c.n.downloads.Add(1)
	c.n.downloadBytes.Add(n)
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", redactURL(f.URL), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return "", fmt.Errorf("downloading %s: sha256 %s, the index says %s", redactURL(f.URL), got, f.SHA256)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	path := c.wheelPath(f.SHA256)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// wheel returns the cached copy of f, downloading it once (its sha256
// checked) when the cache has none.
func (c *client) wheel(ctx context.Context, f File) (string, error) {
	if path, err := c.cached(f.SHA256); err == nil {
		return path, nil
	}
	v, err := c.once(ctx, wheelKey(f.SHA256), func(ctx context.Context) (any, error) {
		if path, err := c.cached(f.SHA256); err == nil {
			return path, nil
		}
		return c.fetchWheel(ctx, f)
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// fetchWheel reads f from upstream into the cache; it runs in the wheel's
// flight.
func (c *client) fetchWheel(ctx context.Context, f File) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.do(req)
	if err != nil {
		return "", fmt.Errorf("fetching %s: %w", redactURL(f.URL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fetching %s: HTTP %d", redactURL(f.URL), resp.StatusCode)
	}
	return c.storeWheel(resp.Body, f, nil)
}
