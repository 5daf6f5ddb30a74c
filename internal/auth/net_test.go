package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/testenv/faultproxy"
)

// fastNet retries quickly and times out soon, so faults cost the tests
// little time.
var fastNet = Network{ConnectTimeout: 2 * time.Second, ResponseTimeout: 500 * time.Millisecond, IdleTimeout: 300 * time.Millisecond,
	Attempts: 4, Backoff: 10 * time.Millisecond, MaxBackoff: 2 * time.Second}

// steadyNet is fastNet with timeouts a loaded CI machine never reaches on
// loopback: the tests of transient faults count the attempts their faults
// use, and a healthy answer stalled by the machine must not use another.
var steadyNet = func() Network {
	n := fastNet
	n.ResponseTimeout, n.IdleTimeout = 5*time.Second, 2*time.Second
	return n
}()

// fileServer serves a file of size bytes at /f with an ETag and range
// requests (http.ServeContent), as an index's CDN does; version changes
// the content and the ETag.
type fileServer struct {
	size    int
	version atomic.Int64
	gets    atomic.Int64
}

func (s *fileServer) content() []byte {
	return bytes.Repeat([]byte{byte('a' + s.version.Load())}, s.size)
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.gets.Add(1)
	if r.URL.Path != "/f" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, s.version.Load()))
	http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(s.content()))
}

func faulty(t *testing.T, h http.Handler, rules ...faultproxy.Rule) (*faultproxy.Proxy, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p, err := faultproxy.Start(srv.URL, rules...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, "http://" + p.Addr()
}

func fastAccess(t *testing.T) *Access {
	t.Helper()
	return accessWith(t, fastNet)
}

func accessWith(t *testing.T, n Network) *Access {
	t.Helper()
	a, err := New(Config{Network: n})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestIndexRetriesTransientFaults: every transient fault of an index is
// retried, or its body resumed, and the client reads the whole file.
func TestIndexRetriesTransientFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule faultproxy.Rule
	}{
		{"502 twice", faultproxy.Rule{Times: 2, Fault: faultproxy.Fault{Status: 502}}},
		{"503 with Retry-After", faultproxy.Rule{Times: 1, Fault: faultproxy.Fault{Status: 503, RetryAfter: "1"}}},
		{"429", faultproxy.Rule{Times: 1, Fault: faultproxy.Fault{Status: 429}}},
		{"connection reset", faultproxy.Rule{Times: 2, Fault: faultproxy.Fault{Reset: true}}},
		{"EOF mid-body", faultproxy.Rule{Times: 1, Fault: faultproxy.Fault{Cut: true}}},
		{"stalled body", faultproxy.Rule{Times: 1, Fault: faultproxy.Fault{StallBody: time.Minute}}},
		{"latency", faultproxy.Rule{Fault: faultproxy.Fault{Delay: 100 * time.Millisecond}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &fileServer{size: 256 << 10}
			tc.rule.Name = "fault"
			p, u := faulty(t, fs, tc.rule)
			start := time.Now()
			resp, err := accessWith(t, steadyNet).HTTPClient().Get(u + "/f")
			if err != nil {
				t.Fatalf("GET with %s = %v, want it retried", tc.name, err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(b, fs.content()) {
				t.Fatalf("GET with %s read %d bytes, %v; want the %d bytes of the file", tc.name, len(b), err, fs.size)
			}
			if p.Fired("fault") == 0 {
				t.Errorf("the fault %s never fired", tc.name)
			}
			if tc.rule.RetryAfter != "" && time.Since(start) < 900*time.Millisecond {
				t.Errorf("retried after %s, before the Retry-After of 1s", time.Since(start))
			}
		})
	}
}

// TestIndexNeverRetriesRefusals: 401, 403 and 404 are answers, asked once.
func TestIndexNeverRetriesRefusals(t *testing.T) {
	for _, code := range []int{401, 403, 404} {
		p, u := faulty(t, &fileServer{size: 10}, faultproxy.Rule{Name: "refuse", Fault: faultproxy.Fault{Status: code}})
		resp, err := fastAccess(t).HTTPClient().Get(u + "/f")
		if err != nil {
			t.Fatalf("GET answered %d = %v, want the response", code, err)
		}
		resp.Body.Close()
		if resp.StatusCode != code || p.Requests() != 1 {
			t.Errorf("GET answered %d: status %d after %d requests, want %d after 1", code, resp.StatusCode, p.Requests(), code)
		}
	}
}

// TestIndexPermanentFaults: a fault that does not go away fails after the
// tries (a server that never answers: after one), with an error naming the
// host and the phase, exit 69.
func TestIndexPermanentFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault faultproxy.Fault
		want  []string
		tries int
	}{
		{"503 for good", faultproxy.Fault{Status: 503}, []string{"answered GET /f with HTTP 503", "4 tries"}, 4},
		{"stalled header", faultproxy.Fault{StallHeader: time.Minute}, []string{PhaseResponse, "nothing within 500ms", "--response-timeout"}, 1},
		{"stalled body", faultproxy.Fault{StallBody: time.Minute}, []string{PhaseBody, "nothing within 300ms", "--idle-timeout", "4 tries"}, 4},
		{"reset", faultproxy.Fault{Reset: true}, []string{PhaseResponse, "4 tries"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, u := faulty(t, &fileServer{size: 64 << 10}, faultproxy.Rule{Name: "fault", Fault: tc.fault})
			host := strings.TrimPrefix(u, "http://")
			resp, err := fastAccess(t).HTTPClient().Get(u + "/f")
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil {
				t.Fatalf("GET with %s succeeded", tc.name)
			}
			for _, w := range append(tc.want, "index "+host) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("GET with %s = %v, want it to say %q", tc.name, err, w)
				}
			}
			if exitcode.Code(err) != exitcode.Unavailable {
				t.Errorf("exit code of %v = %d, want %d", err, exitcode.Code(err), exitcode.Unavailable)
			}
			if got := p.Fired("fault"); got != tc.tries {
				t.Errorf("%s: %d requests, want %d", tc.name, got, tc.tries)
			}
		})
	}
}

// TestConnectRefusedIsNotRetried: nothing listening fails at once (one
// try), with the address.
func TestConnectRefusedIsNotRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = fastAccess(t).HTTPClient().Get("http://" + addr + "/simple/")
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "tries") {
		t.Errorf("GET of a closed port = %v, want connection refused for %s, tried once", err, addr)
	}
}

// TestResumeNeverStitchesTwoVersions: a body cut short is resumed only
// from the same version of the file (If-Range); when the file changed in
// between, the read fails instead of combining the two.
func TestResumeNeverStitchesTwoVersions(t *testing.T) {
	fs := &fileServer{size: 256 << 10}
	_, u := faulty(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			fs.version.Store(1) // a new upload between the two reads
		}
		fs.ServeHTTP(w, r)
	}), faultproxy.Rule{Name: "cut", Times: 1, Fault: faultproxy.Fault{Cut: true}})
	resp, err := fastAccess(t).HTTPClient().Get(u + "/f")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("read %d bytes of a file that changed mid-read without an error", len(b))
	}
	if bytes.ContainsRune(b, 'b') {
		t.Errorf("the read combined two versions of the file")
	}
}

// TestCancelStopsTheBackoff: a cancelled context ends the wait for a
// retry at once, with the context's error.
func TestCancelStopsTheBackoff(t *testing.T) {
	_, u := faulty(t, &fileServer{size: 10}, faultproxy.Rule{Name: "busy", Fault: faultproxy.Fault{Status: 429, RetryAfter: "60"}})
	a, err := New(Config{Network: Network{MaxBackoff: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/f", nil)
	done := make(chan error, 1)
	go func() {
		_, err := a.HTTPClient().Do(req)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Do() after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled request still waits for its 60s Retry-After")
	}
}

// TestRegistryRetriesOnce: ggcr calls through RemoteOptions survive 5xx
// bursts and resets, and a registry that keeps failing is asked exactly
// Attempts times per request (the transport's retries, never ggcr's on
// top), then fails naming the registry.
func TestRegistryRetriesOnce(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	p, u := faulty(t, reg,
		faultproxy.Rule{Name: "503", Times: 1, PerPath: true, Fault: faultproxy.Fault{Status: 503}},
		faultproxy.Rule{Name: "reset", Methods: []string{http.MethodGet}, Times: 2, Fault: faultproxy.Fault{Reset: true}},
	)
	host := strings.TrimPrefix(u, "http://")
	a := fastAccess(t)
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/ml/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, a.RemoteOptions()...); err != nil {
		t.Fatalf("remote.Write through 503s = %v", err)
	}
	got, err := remote.Image(ref, a.RemoteOptions()...)
	if err != nil {
		t.Fatalf("remote.Image through 503s and resets = %v", err)
	}
	if _, err := got.RawManifest(); err != nil {
		t.Fatal(err)
	}
	if p.Fired("503") == 0 || p.Fired("reset") == 0 {
		t.Errorf("faults fired: 503 %d, reset %d; want both", p.Fired("503"), p.Fired("reset"))
	}

	p.SetRules(faultproxy.Rule{Name: "down", Methods: []string{http.MethodGet, http.MethodHead}, Path: "/manifests/", Fault: faultproxy.Fault{Status: 503}})
	_, err = remote.Head(ref, a.RemoteOptions()...)
	var se *StatusError
	if !errors.As(err, &se) || se.Host != host || se.Status != 503 || exitcode.Code(err) != exitcode.Unavailable {
		t.Errorf("remote.Head of a registry down = %v, want a *StatusError for %s (exit 69)", err, host)
	}
	if n := p.Fired("down"); n != fastNet.Attempts {
		t.Errorf("a registry down was asked %d times, want %d", n, fastNet.Attempts)
	}
}
