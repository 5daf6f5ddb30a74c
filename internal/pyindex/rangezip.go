package pyindex

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sync"
)

// blockSize is the unit of range requests: the first one reads the last
// block (the zip's end record and, for most wheels, the whole central
// directory); METADATA then takes one more.
const blockSize = 1 << 20

var contentRange = regexp.MustCompile(`^bytes (\d+)-(\d+)/(\d+)$`)

// rangeReader is an io.ReaderAt over HTTP range requests: the tail it
// was seeded with, then whole blocks fetched on demand.
//
// Every block is asked for with If-Range naming the tail's validator: a
// file replaced upstream in between answers 200 (the whole new file), not
// 206, and the read fails rather than stitch two versions together.
type rangeReader struct {
	ctx       context.Context
	c         *client
	url       string
	size      int64
	tailOff   int64
	tail      []byte
	validator string // the tail's ETag or Last-Modified
	mu        sync.Mutex
	blocks    map[int64][]byte // by block index
}

func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	n := 0
	for n < len(p) && off < r.size {
		var k int
		if off >= r.tailOff {
			k = copy(p[n:], r.tail[off-r.tailOff:])
		} else {
			blk, err := r.block(off / blockSize)
			if err != nil {
				return n, err
			}
			k = copy(p[n:], blk[off%blockSize:])
		}
		n += k
		off += int64(k)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (r *rangeReader) block(i int64) ([]byte, error) {
	r.mu.Lock()
	b, ok := r.blocks[i]
	r.mu.Unlock()
	if ok {
		return b, nil
	}
	start, end := i*blockSize, min((i+1)*blockSize, r.size)-1
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", start, end))
	req.Header.Set("If-Range", r.validator)
	resp, err := r.c.do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", redactURL(r.url), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil, fmt.Errorf("fetching %s bytes %d-%d: the file changed upstream while its zip directory was read (If-Range %s no longer holds)", redactURL(r.url), start, end, r.validator)
	}
	if resp.StatusCode != http.StatusPartialContent {
		return nil, fmt.Errorf("fetching %s bytes %d-%d: HTTP %d", redactURL(r.url), start, end, resp.StatusCode)
	}
	if want := fmt.Sprintf("bytes %d-%d/%d", start, end, r.size); resp.Header.Get("Content-Range") != want {
		return nil, fmt.Errorf("fetching %s: Content-Range %q, want %q", redactURL(r.url), resp.Header.Get("Content-Range"), want)
	}
	b, err = io.ReadAll(io.LimitReader(resp.Body, blockSize+1))
	r.c.n.ranges.Add(1)
	r.c.n.rangeBytes.Add(int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", redactURL(r.url), err)
	}
	if int64(len(b)) != end-start+1 {
		return nil, fmt.Errorf("fetching %s bytes %d-%d: got %d bytes", redactURL(r.url), start, end, len(b))
	}
	r.mu.Lock()
	r.blocks[i] = b
	r.mu.Unlock()
	return b, nil
}
