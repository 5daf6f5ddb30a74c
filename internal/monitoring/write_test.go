package monitoring

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func oneGauge() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: RescanSuccess, Help: "h"})
	g.Set(1)
	reg.MustRegister(g)
	return reg
}

// TestPushRetries: a Pushgateway answering 503 and 429 is tried again
// (with the same body) until it takes the push; 400 is not retried; the
// attempts are bounded.
func TestPushRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answers   []int
		wantCalls int32
		wantErr   bool
	}{
		{"transient then ok", []int{503, 429, 200}, 3, false},
		{"permanent", []int{400, 200}, 1, true},
		{"always failing", []int{500, 500, 500, 500, 500}, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				b, _ := io.ReadAll(r.Body)
				if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/job/"+JobRescan) || len(b) == 0 {
					t.Errorf("request %d: %s %s with %d bytes, want a PUT of job %s with the metrics", n, r.Method, r.URL.Path, len(b), JobRescan)
				}
				w.WriteHeader(tc.answers[n-1])
			}))
			defer srv.Close()
			err := Push(context.Background(), srv.URL, JobRescan, oneGauge(), WithPushAttempts(3, time.Millisecond))
			if (err != nil) != tc.wantErr || calls.Load() != tc.wantCalls {
				t.Errorf("Push() = %v after %d requests, want error %v after %d", err, calls.Load(), tc.wantErr, tc.wantCalls)
			}
		})
	}
}

// TestPushTimeout: a Pushgateway that never answers is given up on after
// the timeout, each attempt.
func TestPushTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	start := time.Now()
	err := Push(context.Background(), srv.URL, JobRelease, oneGauge(), WithPushTimeout(100*time.Millisecond), WithPushAttempts(2, time.Millisecond))
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("Push() to a silent server = %v after %s, want a timeout error", err, time.Since(start))
	}
}

// TestWriteTextfileMode: the file node_exporter reads is world-readable and
// holds the metric.
func TestWriteTextfileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.prom")
	if err := WriteTextfile(path, oneGauge()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if fi.Mode().Perm() != 0o644 || !strings.Contains(string(b), RescanSuccess+" 1") {
		t.Errorf("mode %v, content %q; want 0644 and the gauge", fi.Mode().Perm(), b)
	}
}
