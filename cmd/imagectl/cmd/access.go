package cmd

import (
	"context"
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
}

func (f *accessFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.caFiles, "ca-file", splitList(os.Getenv("IMAGECTL_CA_FILE")),
		"PEM file of a CA trusted besides the system store, for registries and indexes (repeatable; default $IMAGECTL_CA_FILE, colon-separated)")
	fs.StringArrayVar(&f.insecure, "insecure-registry", nil,
		"registry (host[:port]) that may be reached over plain HTTP (repeatable; loopback always may)")
	fs.StringVar(&f.netrc, "netrc", "",
		"netrc file with index credentials (default $NETRC, else ~/.netrc when it exists)")
}

// access loads the flags: registry credentials come from the Docker config
// ($DOCKER_CONFIG or ~/.docker/config.json, credential helpers included).
func (f *accessFlags) access() (*auth.Access, error) {
	netrc := f.netrc
	if netrc == "" {
		netrc = os.Getenv("NETRC")
	}
	if netrc == "" {
		if home, err := os.UserHomeDir(); err == nil {
			if p := filepath.Join(home, ".netrc"); fileExists(p) {
				netrc = p
			}
		}
	}
	a, err := auth.New(auth.Config{CAFiles: f.caFiles, Insecure: f.insecure, NetrcFile: netrc})
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Usage, err)
	}
	return a, nil
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
