// Command containerd-stargz-grpc is stargz-snapshotter's remote snapshotter
// (containerd's proxy plugin "stargz"), which mounts eStargz layers lazily
// over FUSE and fetches their files from the registry on first read.
//
// Upstream's main package lives in the module
// github.com/containerd/stargz-snapshotter/cmd, which the Go module proxy
// does not serve (it is not tagged as a module of its own). This is its
// main (cmd/containerd-stargz-grpc/main.go at v0.18.2) over the served
// library module, trimmed to what imagectl runs: the in-memory metadata
// store (upstream's default), the Docker config keychain, no FUSE manager,
// no IPFS, no CRI keychain socket. Flags and the TOML config keep
// upstream's names, so upstream's documentation applies.
package main

import (
	"context"
	"flag"
	"fmt"
	golog "log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"

	snapshotsapi "github.com/containerd/containerd/api/services/snapshots/v1"
	"github.com/containerd/containerd/v2/contrib/snapshotservice"
	"github.com/containerd/log"
	"github.com/containerd/stargz-snapshotter/fs"
	memorymetadata "github.com/containerd/stargz-snapshotter/metadata/memory"
	"github.com/containerd/stargz-snapshotter/service"
	"github.com/containerd/stargz-snapshotter/service/keychain/keychainconfig"
	"github.com/containerd/stargz-snapshotter/version"
	metrics "github.com/docker/go-metrics"
	"github.com/pelletier/go-toml"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
)

const (
	defaultAddress    = "/run/containerd-stargz-grpc/containerd-stargz-grpc.sock"
	defaultConfigPath = "/etc/containerd-stargz-grpc/config.toml"
	defaultRootDir    = "/var/lib/containerd-stargz-grpc"
)

var (
	address      = flag.String("address", defaultAddress, "address for the snapshotter's GRPC server")
	configPath   = flag.String("config", defaultConfigPath, "path to the configuration file")
	logLevel     = flag.String("log-level", log.InfoLevel.String(), "set the logging level [trace, debug, info, warn, error, fatal, panic]")
	rootDir      = flag.String("root", defaultRootDir, "path to the root directory for this snapshotter")
	printVersion = flag.Bool("version", false, "print the version")
)

// snapshotterConfig is upstream's config file, less the sections this
// build leaves out.
type snapshotterConfig struct {
	service.Config
	// MetricsAddress is the TCP address of the Prometheus metrics (the
	// fetched-bytes counters among them); empty serves none.
	MetricsAddress string `toml:"metrics_address" json:"metrics_address"`
}

func main() {
	flag.Parse()
	log.SetFormat(log.JSONFormat)
	if err := log.SetLevel(*logLevel); err != nil {
		log.L.WithError(err).Fatal("failed to prepare logger")
	}
	if *printVersion {
		fmt.Println("containerd-stargz-grpc", version.Version, version.Revision)
		return
	}
	ctx := log.WithLogger(context.Background(), log.L)
	golog.SetOutput(log.G(ctx).WriterLevel(log.DebugLevel))

	var config snapshotterConfig
	tree, err := toml.LoadFile(*configPath)
	if err != nil && (!os.IsNotExist(err) || *configPath != defaultConfigPath) {
		log.G(ctx).WithError(err).Fatalf("failed to load config file %q", *configPath)
	}
	if tree != nil {
		if err := tree.Unmarshal(&config); err != nil {
			log.G(ctx).WithError(err).Fatalf("failed to unmarshal config file %q", *configPath)
		}
	}
	if err := service.Supported(*rootDir); err != nil {
		log.G(ctx).WithError(err).Fatalf("snapshotter is not supported")
	}
	if config.PassThrough {
		config.Direct = true
	}
	rpc := grpc.NewServer()
	credsFuncs, err := keychainconfig.ConfigKeychain(ctx, rpc, &keychainconfig.Config{})
	if err != nil {
		log.G(ctx).WithError(err).Fatalf("failed to configure keychain")
	}
	fsOpts := []fs.Option{fs.WithMetricsLogLevel(log.InfoLevel), fs.WithMetadataStore(memorymetadata.NewReader)}
	rs, err := service.NewStargzSnapshotterService(ctx, *rootDir, &config.Config,
		service.WithCredsFuncs(credsFuncs...), service.WithFilesystemOptions(fsOpts...))
	if err != nil {
		log.G(ctx).WithError(err).Fatalf("failed to configure snapshotter")
	}
	snapshotsapi.RegisterSnapshotsServer(rpc, snapshotservice.FromSnapshotter(rs))
	if err := serve(ctx, rpc, *address, config); err != nil {
		log.G(ctx).WithError(err).Fatalf("failed to serve snapshotter")
	}
	log.G(ctx).Debug("Closing the snapshotter")
	rs.Close()
	log.G(ctx).Info("Exiting")
}

// serve listens on addr (and the metrics address) until SIGINT or SIGTERM.
func serve(ctx context.Context, rpc *grpc.Server, addr string, config snapshotterConfig) error {
	if err := os.MkdirAll(filepath.Dir(addr), 0700); err != nil {
		return fmt.Errorf("failed to create directory %q: %w", filepath.Dir(addr), err)
	}
	if err := os.RemoveAll(addr); err != nil {
		return fmt.Errorf("failed to remove %q: %w", addr, err)
	}
	errCh := make(chan error, 1)
	if config.MetricsAddress != "" {
		l, err := net.Listen("tcp", config.MetricsAddress)
		if err != nil {
			return fmt.Errorf("failed to get listener for metrics endpoint: %w", err)
		}
		m := http.NewServeMux()
		m.Handle("/metrics", metrics.Handler())
		go func() {
			if err := http.Serve(l, m); err != nil {
				errCh <- fmt.Errorf("error on serving metrics via %q: %w", config.MetricsAddress, err)
			}
		}()
	}
	l, err := net.Listen("unix", addr)
	if err != nil {
		return fmt.Errorf("error on listen socket %q: %w", addr, err)
	}
	go func() {
		if err := rpc.Serve(l); err != nil {
			errCh <- fmt.Errorf("error on serving via socket %q: %w", addr, err)
		}
	}()
	sigCh := make(chan os.Signal, 1)
	signal.Notify(sigCh, unix.SIGINT, unix.SIGTERM)
	select {
	case s := <-sigCh:
		log.G(ctx).Infof("Got %v", s)
		return nil
	case err := <-errCh:
		return err
	}
}
