package wheelhouse

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"imagectl/internal/pep"
)

// Handler serves the index at dir: /simple/ (HTML, or PEP 691 JSON when the
// client's Accept header prefers it) and /files/.
func Handler(dir string) http.Handler {
	files := http.FileServer(http.Dir(filepath.Join(dir, "files")))
	mux := http.NewServeMux()
	mux.Handle("/files/", http.StripPrefix("/files/", files))
	mux.HandleFunc("/simple/", func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean(r.URL.Path)
		if !strings.HasSuffix(r.URL.Path, "/") {
			http.Redirect(w, r, p+"/", http.StatusMovedPermanently)
			return
		}
		rel := strings.TrimPrefix(p, "/simple")
		rel = strings.TrimPrefix(rel, "/")
		if strings.Contains(rel, "/") || strings.HasPrefix(rel, ".") {
			http.NotFound(w, r)
			return
		}
		if n := pep.Normalize(rel); rel != "" && n != rel {
			// PEP 503: redirect to the normalized name.
			http.Redirect(w, r, "/simple/"+n+"/", http.StatusMovedPermanently)
			return
		}
		name, ctype := "index.html", "text/html; charset=utf-8"
		if prefersJSON(r.Header.Get("Accept")) {
			name, ctype = "index.json", JSONType
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Vary", "Accept")
		http.ServeFile(w, r, filepath.Join(dir, "simple", filepath.FromSlash(rel), name))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			http.Redirect(w, r, "/simple/", http.StatusFound)
			return
		}
		http.NotFound(w, r)
	})
	return mux
}

// prefersJSON reports whether an Accept header ranks the PEP 691 JSON type
// above HTML.
func prefersJSON(accept string) bool {
	qJSON, qHTML := -1.0, -1.0
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		mt := strings.TrimSpace(fields[0])
		q := 1.0
		for _, f := range fields[1:] {
			if k, v, ok := strings.Cut(strings.TrimSpace(f), "="); ok && k == "q" {
				if x, err := strconv.ParseFloat(v, 64); err == nil {
					q = x
				}
			}
		}
		switch mt {
		case JSONType:
			qJSON = max(qJSON, q)
		case "application/vnd.pypi.simple.v1+html", "text/html", "application/vnd.pypi.simple.latest+html":
			qHTML = max(qHTML, q)
		case "application/vnd.pypi.simple.latest+json":
			qJSON = max(qJSON, q)
		}
	}
	return qJSON > 0 && qJSON >= qHTML
}

// Server is a running index server.
type Server struct {
	srv     *http.Server
	ln      net.Listener
	stopped chan struct{}
	err     error
}

// Serve serves the index at dir on addr (e.g. "127.0.0.1:0") until ctx is
// done or Close is called.
func Serve(ctx context.Context, dir, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("wheel index: listening on %s: %w", addr, err)
	}
	s := &Server{
		srv:     &http.Server{Handler: Handler(dir), ReadHeaderTimeout: 10 * time.Second},
		ln:      ln,
		stopped: make(chan struct{}),
	}
	go func() {
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
		close(s.stopped)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.stopped:
		}
	}()
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the index URL to give pip: http://HOST:PORT/simple/.
func (s *Server) URL() string { return "http://" + s.Addr() + "/simple/" }

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Wait blocks until the server stops and returns why (nil after Close).
func (s *Server) Wait() error {
	<-s.stopped
	return s.err
}
