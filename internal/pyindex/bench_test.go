package pyindex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"imagectl/internal/wheelhouse"
)

// servedPath is the file a static server of dir sends for r: index.html
// for a directory, as `python3 -m http.server` and nginx do.
func servedPath(dir string, r *http.Request) string {
	p := filepath.Join(dir, filepath.FromSlash(r.URL.Path))
	if strings.HasSuffix(r.URL.Path, "/") {
		p = filepath.Join(p, "index.html")
	}
	return p
}

// staticServer serves dir as `python3 -m http.server` does: whole files
// (Range ignored), index.html for directories.
type staticServer struct{ dir string }

func (s staticServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := servedPath(s.dir, r)
	f, err := os.Open(p)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	f.WriteTo(w)
}

// fetchLikePip reads u as pip does with a hash in the URL: to a file,
// hashing as it goes, and checks the sha256.
func fetchLikePip(b *testing.B, u, sum, dir string) int64 {
	resp, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	f, err := os.CreateTemp(dir, "pip-*")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); sum != "" && got != sum {
		b.Fatalf("GET %s: sha256 %s, want %s", u, got, sum)
	}
	return n
}

// BenchmarkProxyBigWheel measures the proxy's own handling of a big wheel
// (IMAGECTL_BENCH_BIG_BYTES, default 256 MiB) from a plain static server
// without range requests, as pip up to 23.0 meets it: the metadata (one
// full download, its sha256 checked, kept in the cache), then the file.
// direct is pip reading the wheel from the server itself; cold is a fresh
// cache (metadata + file); warm a second image's lock (cache filled).
func BenchmarkProxyBigWheel(b *testing.B) {
	size := int64(256 << 20)
	if v := os.Getenv("IMAGECTL_BENCH_BIG_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("IMAGECTL_BENCH_BIG_BYTES=%q: %v", v, err)
		}
		size = n
	}
	dir := b.TempDir()
	if _, err := wheelhouse.WriteWheel(dir, wheelhouse.Spec{Name: "big", Version: "1.0", PayloadBytes: size}); err != nil {
		b.Fatal(err)
	}
	if _, err := wheelhouse.WritePlainIndex(dir); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(staticServer{dir})
	defer srv.Close()
	tmp := b.TempDir()
	ctx := context.Background()
	lookup := func(p *Proxy) File {
		_, files, err := p.Project(ctx, "big")
		if err != nil || len(files) != 1 {
			b.Fatalf("project big: %v %v", files, err)
		}
		return files[0]
	}
	viaProxy := func(p *Proxy) {
		f := lookup(p)
		resp, err := http.Get(p.FileURL(f) + ".metadata")
		if err != nil {
			b.Fatal(err)
		}
		m, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(m), "Name: big") {
			b.Fatalf("metadata: HTTP %d %q", resp.StatusCode, m)
		}
		fetchLikePip(b, p.FileURL(f), f.SHA256, tmp)
	}
	b.Run("direct", func(b *testing.B) {
		p, err := Start(Routes{Indexes: []string{srv.URL}}, WithCacheDir(b.TempDir()))
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		f := lookup(p)
		b.SetBytes(size)
		for b.Loop() {
			fetchLikePip(b, f.URL, f.SHA256, tmp)
		}
	})
	b.Run("proxy-cold", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; b.Loop(); i++ {
			p, err := Start(Routes{Indexes: []string{srv.URL}}, WithCacheDir(filepath.Join(b.TempDir(), fmt.Sprint(i))))
			if err != nil {
				b.Fatal(err)
			}
			viaProxy(p)
			p.Close()
		}
	})
	b.Run("proxy-warm", func(b *testing.B) {
		cache := b.TempDir()
		p, err := Start(Routes{Indexes: []string{srv.URL}}, WithCacheDir(cache))
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		viaProxy(p)
		b.SetBytes(size)
		b.ResetTimer()
		for b.Loop() {
			viaProxy(p)
		}
	})
}
