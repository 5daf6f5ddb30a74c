package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// counting counts the blob bytes the registry serves (GET .../blobs/...,
// ranges included): GET /_imagectl/bytes answers {"blob_bytes": N,
// "blob_requests": M} since the start, which hack/gpu/e2e.sh's coldstart
// phase reads before and after each pull to report the bytes it fetched.
//
// A blob GET with a Range header is served from DIR by http.ServeContent,
// which answers several ranges in one multipart response as the
// distribution registry does (ggcr's registry answers the first range
// only): stargz-snapshotter asks for the chunks it needs in one request.
type counting struct {
	dir      string
	next     http.Handler
	bytes    atomic.Int64
	requests atomic.Int64
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_imagectl/bytes" {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"blob_bytes\": %d, \"blob_requests\": %d}\n", c.bytes.Load(), c.requests.Load())
		return
	}
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
		c.requests.Add(1)
		w = &countingWriter{ResponseWriter: w, n: &c.bytes}
		if r.Header.Get("Range") != "" {
			if h, err := v1.NewHash(path.Base(r.URL.Path)); err == nil {
				if f, err := os.Open(filepath.Join(c.dir, h.Algorithm, h.Hex)); err == nil {
					defer f.Close()
					w.Header().Set("Docker-Content-Digest", h.String())
					http.ServeContent(w, r, "", time.Time{}, f)
					return
				}
			}
		}
	}
	c.next.ServeHTTP(w, r)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

// ReadFrom keeps the blob handler's io.Copy on the sendfile path.
func (w *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(w.ResponseWriter, r)
	w.n.Add(n)
	return n, err
}

// registryMain is `gputool registry --addr 127.0.0.1:5000 --dir DIR`: ggcr's
// registry (the OCI distribution API, manifests in memory, blobs on disk in
// DIR) on loopback, until SIGTERM. On the GPU machine it stands in for the
// distribution registry, whose binary would not fit the device tool's
// 64 MiB carry beside the rest.
func registryMain(args []string) error {
	fl := flag.NewFlagSet("registry", flag.ContinueOnError)
	addr := fl.String("addr", "127.0.0.1:5000", "listen address (loopback)")
	dir := fl.String("dir", "", "blob folder")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("registry: --dir is required")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	h := &counting{dir: *dir, next: registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(registry.NewDiskBlobHandler(*dir)))}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 30 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "gputool registry: serving %s, blobs in %s\n", *addr, *dir)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
