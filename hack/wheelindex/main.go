// Command wheelindex makes and serves the local wheel index used by the demo
// and the tests.
//
//	wheelindex generate DIR [--core-bytes N]    demo wheels + index (cached)
//	wheelindex publish DIR --name N --version V [--requires R]... [--payload-bytes N]
//	wheelindex serve DIR [--addr 127.0.0.1:0] [--url-file FILE]
//	                     [--tls-cert PEM --tls-key PEM] [--basic-auth FILE]
//	wheelindex standins DIR [--big-bytes N] [--copy GLOB]...   the pytorch spec's index stand-ins
//
// With --tls-cert/--tls-key it serves HTTPS; with --basic-auth (a file
// holding user:password) every request needs those credentials (401
// otherwise): the shape of a private wheel mirror.
package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	"imagectl/internal/atomicfile"
	"imagectl/internal/wheelhouse"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "wheelindex:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage: wheelindex generate|publish|serve|standins DIR [flags]")

func run(ctx context.Context, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	switch args[0] {
	case "generate":
		return generate(args[1:])
	case "publish":
		return publish(args[1:])
	case "serve":
		return serve(ctx, args[1:])
	case "standins":
		return standins(args[1:])
	}
	return fmt.Errorf("unknown command %q: %w", args[0], errUsage)
}

// parse accepts DIR before or after the flags.
func parse(fs *flag.FlagSet, args []string) (string, error) {
	var dir string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		dir, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return "", fmt.Errorf("%v: %w", err, errUsage)
	}
	if dir == "" && fs.NArg() > 0 {
		dir = fs.Arg(0)
	}
	if dir == "" {
		return "", fmt.Errorf("%s: missing DIR: %w", fs.Name(), errUsage)
	}
	return dir, nil
}

// DemoSpecs are the demo wheels: demo-core stands in for a big, frozen wheel
// (torch), demo-util and demo-dep for the fast-moving periphery.
func DemoSpecs(coreBytes int64) []wheelhouse.Spec {
	return []wheelhouse.Spec{
		{Name: "demo-core", Version: "1.0.0", PayloadBytes: coreBytes},
		{Name: "demo-dep", Version: "1.0.0"},
		{Name: "demo-util", Version: "1.0.0", Requires: []string{"demo-dep>=1"}},
	}
}

const stampName = "generated.json"

func generate(args []string) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	coreBytes := fs.Int64("core-bytes", 64<<20, "size of demo-core's incompressible payload in bytes")
	var copies multi
	fs.Var(&copies, "copy", "a wheel file (glob) to add to the index as is, e.g. Debian's pip wheel (repeatable)")
	dir, err := parse(fs, args)
	if err != nil {
		return err
	}
	for _, g := range copies {
		m, err := filepath.Glob(g)
		if err != nil || len(m) == 0 {
			return fmt.Errorf("generate: --copy %s matches no file", g)
		}
		for _, f := range m {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if err := atomicfile.Write(filepath.Join(dir, "files", filepath.Base(f)), b, 0o644); err != nil {
				return err
			}
		}
	}
	specs := DemoSpecs(*coreBytes)
	stamp := filepath.Join(dir, stampName)
	if b, err := os.ReadFile(stamp); err == nil {
		var old []wheelhouse.Spec
		if json.Unmarshal(b, &old) == nil && reflect.DeepEqual(old, specs) && wheelsPresent(dir, specs) {
			// The wheels are there; the pages are cheap to remake, and this
			// picks up a change in their format.
			if _, err := wheelhouse.WriteIndex(dir); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wheelindex: %s is up to date\n", dir)
			return nil
		}
	}
	for _, s := range specs {
		if _, err := wheelhouse.WriteWheel(filepath.Join(dir, "files"), s); err != nil {
			return err
		}
	}
	files, err := wheelhouse.WriteIndex(dir)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(specs, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(stamp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintf(os.Stderr, "wheelindex: %s %d bytes sha256:%s\n", f.Filename, f.Size, f.SHA256)
	}
	return nil
}

func wheelsPresent(dir string, specs []wheelhouse.Spec) bool {
	for _, s := range specs {
		if _, err := os.Stat(filepath.Join(dir, "files", s.Filename())); err != nil {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(dir, "simple", "index.html"))
	return err == nil
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func publish(args []string) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	var s wheelhouse.Spec
	var requires multi
	fs.StringVar(&s.Name, "name", "", "project name")
	fs.StringVar(&s.Version, "version", "", "version")
	fs.StringVar(&s.RequiresPython, "requires-python", "", "Requires-Python (default >=3.8)")
	fs.Int64Var(&s.PayloadBytes, "payload-bytes", 0, "size of an incompressible payload file")
	fs.Var(&requires, "requires", "a Requires-Dist line (repeatable)")
	dir, err := parse(fs, args)
	if err != nil {
		return err
	}
	if s.Name == "" || s.Version == "" {
		return fmt.Errorf("publish: --name and --version are required: %w", errUsage)
	}
	s.Requires = requires
	f, err := wheelhouse.Publish(dir, s)
	if err != nil {
		return err
	}
	fmt.Printf("%s sha256:%s\n", f.Filename, f.SHA256)
	return nil
}

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	urlFile := fs.String("url-file", "", "write the index URL to this file once listening")
	cert := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM)")
	key := fs.String("tls-key", "", "the certificate's key (PEM)")
	basic := fs.String("basic-auth", "", "file holding user:password that every request must carry")
	dir, err := parse(fs, args)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "simple", "index.html")); err != nil {
		return fmt.Errorf("serve: %s is not an index (run generate first): %w", dir, err)
	}
	if (*cert == "") != (*key == "") {
		return fmt.Errorf("serve: --tls-cert and --tls-key go together: %w", errUsage)
	}
	if *cert == "" && *basic == "" {
		s, err := wheelhouse.Serve(ctx, dir, *addr)
		if err != nil {
			return err
		}
		return announce(s.URL(), *urlFile, s.Wait, func() { s.Close() })
	}
	return servePrivate(ctx, dir, *addr, *cert, *key, *basic, *urlFile)
}

// servePrivate serves the index over TLS and/or behind basic auth.
func servePrivate(ctx context.Context, dir, addr, cert, key, basicFile, urlFile string) error {
	h := wheelhouse.Handler(dir)
	if basicFile != "" {
		b, err := os.ReadFile(basicFile)
		if err != nil {
			return fmt.Errorf("serve: --basic-auth: %w", err)
		}
		user, pw, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
		if !ok || user == "" || pw == "" {
			return fmt.Errorf("serve: --basic-auth %s: want one line user:password", basicFile)
		}
		h = basicAuth(h, user, pw)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	scheme := "http"
	if cert != "" {
		scheme = "https"
	}
	done := make(chan error, 1)
	go func() {
		var err error
		if cert != "" {
			err = srv.ServeTLS(ln, cert, key)
		} else {
			err = srv.Serve(ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}
	go func() { <-ctx.Done(); stop() }()
	return announce(scheme+"://"+ln.Addr().String()+"/simple/", urlFile, func() error { return <-done }, stop)
}

// basicAuth answers 401 to a request without user:pw, comparing in
// constant time.
func basicAuth(next http.Handler, user, pw string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(pw)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="wheel index"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// announce writes the URL to urlFile and stdout, then waits for the server.
func announce(url, urlFile string, wait func() error, stop func()) error {
	if urlFile != "" {
		if err := atomicfile.Write(urlFile, []byte(url+"\n"), 0o644); err != nil {
			stop()
			return err
		}
	}
	fmt.Println(url)
	return wait()
}
