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
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

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
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(registry.NewDiskBlobHandler(*dir)))
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
