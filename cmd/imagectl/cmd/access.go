package cmd

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
)

// accessFlags are the credential and TLS flags every command shares.
type accessFlags struct {
	caFiles  []string
	insecure []string
	netrc    string
	net      auth.Network
}

func (f *accessFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.caFiles, "ca-file", splitList(os.Getenv("IMAGECTL_CA_FILE")),
		"PEM file of a CA trusted besides the system store, for registries and indexes (repeatable; default $IMAGECTL_CA_FILE, colon-separated)")
	fs.StringArrayVar(&f.insecure, "insecure-registry", nil,
		"registry (host[:port]) that may be reached over plain HTTP (repeatable; loopback always may)")
	fs.StringVar(&f.netrc, "netrc", "",
		"netrc file with index credentials (default $NETRC, else ~/.netrc when it exists)")
	d := auth.DefaultNetwork()
	fs.DurationVar(&f.net.ConnectTimeout, "connect-timeout", d.ConnectTimeout,
		"longest wait for a registry or index to accept a connection; the TLS handshake gets as long again")
	fs.DurationVar(&f.net.ResponseTimeout, "response-timeout", d.ResponseTimeout,
		"longest wait for a registry's or index's response header once a request is sent")
	fs.DurationVar(&f.net.IdleTimeout, "idle-timeout", d.IdleTimeout,
		"longest a download may receive nothing (no total limit: a wheel or a layer may take as long as bytes keep coming)")
	fs.IntVar(&f.net.Attempts, "retries", d.Attempts-1,
		"times a transient failure (5xx, 429, connection reset, EOF or a stall mid-body) is retried, with exponential backoff")
}

// access loads the flags: registry credentials come from the Docker config
// ($DOCKER_CONFIG or ~/.docker/config.json, credential helpers included).
// A netrc named by --netrc or $NETRC that cannot be read is an error naming
// it; a ~/.netrc found without being named that cannot be read is warned
// about on log and left out.
func (f *accessFlags) access(log *slog.Logger) (*auth.Access, error) {
	netrc, named := f.netrc, true
	if netrc == "" {
		netrc = os.Getenv("NETRC")
	}
	if netrc == "" {
		named = false
		if home, err := os.UserHomeDir(); err == nil {
			if p := filepath.Join(home, ".netrc"); fileExists(p) {
				netrc = p
			}
		}
	}
	if f.net.ConnectTimeout <= 0 || f.net.ResponseTimeout <= 0 || f.net.IdleTimeout <= 0 || f.net.Attempts < 0 {
		return nil, exitcode.Wrap(exitcode.Usage, errors.New("--connect-timeout, --response-timeout and --idle-timeout must be above 0, --retries at least 0"))
	}
	n := f.net
	n.TLSTimeout = n.ConnectTimeout
	n.Attempts++ // the first try and the retries
	cfg := auth.Config{CAFiles: f.caFiles, Insecure: f.insecure, NetrcFile: netrc, Network: n}
	a, err := auth.New(cfg)
	if err != nil && !named && netrc != "" {
		cfg.NetrcFile = ""
		if a2, err2 := auth.New(cfg); err2 == nil {
			log.Warn("ignoring the netrc found in the home folder, which cannot be read (name one with --netrc or $NETRC to make this an error)", "file", netrc, "err", err)
			return a2, nil
		}
	}
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	return a, nil
}

// offlineAnnotation marks a command that reaches no registry, index or
// daemon (it and its subcommands): no credentials are loaded for it, so a
// broken netrc or CA file never stops it.
const offlineAnnotation = "imagectl/offline"

// offline marks c as offline.
func offline(c *cobra.Command) *cobra.Command {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[offlineAnnotation] = "true"
	return c
}

// needsAccess reports whether cmd may touch the network: not when it or a
// parent is marked offline, nor for cobra's help and completion commands.
func needsAccess(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		switch {
		case c.Annotations[offlineAnnotation] != "":
			return false
		case c.Name() == "help", c.Name() == "completion", c.Name() == cobra.ShellCompRequestCmd, c.Name() == cobra.ShellCompNoDescRequestCmd:
			return false
		}
	}
	return true
}

type accessKey struct{}

// accessOf is the command's access, loaded before it ran.
func accessOf(cmd *cobra.Command) *auth.Access {
	if a, ok := cmd.Context().Value(accessKey{}).(*auth.Access); ok {
		return a
	}
	return auth.Default()
}

func withAccess(ctx context.Context, a *auth.Access) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ":") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
