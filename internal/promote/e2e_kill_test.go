package promote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"imagectl/internal/promote"
	"imagectl/internal/testenv"
)

// realRegistry is bin/registry (the distribution registry) on a free
// loopback port with its own storage, behind a proxy that can SIGKILL it
// at the Nth request and that checks every manifest PUT by tag.
type realRegistry struct {
	t       *testing.T
	bin     string
	cfg     string
	backend string // 127.0.0.1:PORT of the registry process

	mu         sync.Mutex
	cmd        *exec.Cmd
	requests   int
	killAt     int
	killed     bool
	violations []string
	proxy      string // 127.0.0.1:PORT clients use
}

func startRealRegistry(t *testing.T, bin string) *realRegistry {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "config.yml")
	conf := fmt.Sprintf("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &realRegistry{t: t, bin: bin, cfg: cfg, backend: addr}
	r.start()
	target, _ := url.Parse("http://" + addr)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = nil
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, err.Error(), http.StatusBadGateway)
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests++
		die := r.killAt > 0 && r.requests == r.killAt
		r.mu.Unlock()
		if die {
			r.kill()
			panic(http.ErrAbortHandler)
		}
		if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/manifests/") {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			r.checkTagPut(req.URL.Path, body)
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(func() { s.Close(); r.kill() })
	r.proxy = strings.TrimPrefix(s.URL, "http://")
	return r
}

func (r *realRegistry) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := exec.Command(r.bin, "serve", r.cfg)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting %s: %v", r.bin, err)
	}
	r.cmd, r.killAt, r.killed = cmd, 0, false
	for i := 0; i < 600; i++ { // 30 s: a loaded CI machine starts it slowly
		if resp, err := http.Get("http://" + r.backend + "/v2/"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("the registry on %s did not answer within 30 s", r.backend)
}

// kill sends SIGKILL to the registry process: no graceful shutdown.
func (r *realRegistry) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil && r.cmd.Process != nil && !r.killed {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.killed = true
	}
}

func (r *realRegistry) arm(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests, r.killAt = 0, n
}

func (r *realRegistry) wasKilled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killed
}

func (r *realRegistry) checkTagPut(path string, body []byte) {
	// exists reports false only when the registry answers that it lacks
	// the object; a dead registry (the PUT will fail too) proves nothing.
	v := tagPutViolation(path, body, func(repo, kind, d string) bool {
		req, _ := http.NewRequest(http.MethodHead, "http://"+r.backend+"/v2/"+repo+"/"+kind+"/"+d, nil)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.index.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return true
		}
		resp.Body.Close()
		return resp.StatusCode != http.StatusNotFound
	})
	if v != "" {
		r.mu.Lock()
		r.violations = append(r.violations, v)
		r.mu.Unlock()
	}
}

// TestKilledRealRegistry SIGKILLs the distribution registry at requests
// spread over a whole promotion, restarts it on its storage, and promotes
// again: every run completes, a further run does nothing, every tag
// between the runs resolves to a whole image, and no tag was written
// before its image was in the repository by digest.
func TestKilledRealRegistry(t *testing.T) {
	env := testenv.Get(t)
	r := startRealRegistry(t, env.Tool(t, "registry"))
	ctx := context.Background()
	f := newFixture(t, r.proxy)
	a, b := f.pushBig(256<<10, 3), f.pushBig(256<<10, 3)
	f.sign(a, f.signer)
	f.sign(b, f.signer)
	f.attestLock(a, f.lock, f.signer)
	f.attestLock(b, f.lock, f.signer)
	f.attestBuild(a, f.signer)
	f.attestBuild(b, f.signer)
	f.attestVerification(a, f.passing(a), f.ver)
	f.attestVerification(b, f.passing(b), f.ver)
	write := func(n int) string {
		f.release = fmt.Sprintf("%s/release/kill%d", r.proxy, n)
		return f.releaseFile(map[string]string{"2.6-cu124": b.DigestStr()},
			rel(a.String(), "2026-11", "2.6-cu124-2026.11"),
			rel(b.String(), "2026-12", "2.6-cu124-2026.12"))
	}
	// Count the requests of one whole promotion.
	r.arm(0)
	if _, err := promote.Run(ctx, write(0), f.opts(promote.WithConfirm(true))...); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	total := r.requests
	r.mu.Unlock()
	step := total / 12
	if step < 1 {
		step = 1
	}
	points := 0
	for n := 1; n <= total; n += step {
		path := write(n)
		r.arm(n)
		_, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
		if !r.wasKilled() {
			t.Fatalf("kill at request %d of %d: the registry was not killed (Run = %v)", n, total, err)
		}
		if err == nil {
			t.Errorf("kill at request %d: Run = nil, want an error", n)
		}
		if re := (*promote.RefusedError)(nil); errors.As(err, &re) {
			t.Errorf("kill at request %d: Run = %v; a dead registry must not read as a gate refusal", n, err)
		}
		points++
		r.start()
		assertTagsWhole(t, f.release)
		if _, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...); err != nil {
			t.Fatalf("kill at request %d: Run again = %v", n, err)
		}
		got := f.state(a, b)
		if got["tag 2.6-cu124"] != b.DigestStr() || got["tag 2.6-cu124-2026.11"] != a.DigestStr() {
			t.Errorf("kill at request %d: after the second run: %v", n, got)
		}
		assertTagsWhole(t, f.release)
		if res, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...); err != nil || len(res.Actions) != 0 {
			t.Errorf("kill at request %d: third run = %v, %v; want no actions", n, res, err)
		}
	}
	t.Logf("a promotion of 2 releases took %d requests; SIGKILLed the registry at %d of them", total, points)
	if len(r.violations) > 0 {
		t.Errorf("tags written before their image was in the repository:\n%s", strings.Join(r.violations, "\n"))
	}
}
