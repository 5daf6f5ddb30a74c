package promote_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"imagectl/internal/exitcode"
	"imagectl/internal/promote"
)

// killable is an in-process registry on a loopback port that can be killed
// (listener and every connection closed) at the Nth request and started
// again on the same port with its content. It checks, on every manifest
// PUT by tag, that the manifest is already in the repository by digest and
// that everything it references is there: a tag must never resolve to a
// partial image.
type killable struct {
	t     *testing.T
	addr  string
	inner http.Handler

	mu         sync.Mutex
	srv        *http.Server
	requests   int
	killAt     int // 0: never
	killed     bool
	violations []string
}

func newKillable(t *testing.T) *killable {
	k := &killable{t: t, inner: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k.addr = ln.Addr().String()
	k.serve(ln)
	t.Cleanup(func() { k.mu.Lock(); k.srv.Close(); k.mu.Unlock() })
	return k
}

func (k *killable) serve(ln net.Listener) {
	k.srv = &http.Server{Handler: k}
	go k.srv.Serve(ln)
}

// arm kills the registry at the nth request from now.
func (k *killable) arm(n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.requests, k.killAt, k.killed = 0, n, false
}

func (k *killable) restart() {
	k.mu.Lock()
	defer k.mu.Unlock()
	ln, err := net.Listen("tcp", k.addr)
	if err != nil {
		k.t.Fatalf("restarting the registry on %s: %v", k.addr, err)
	}
	k.killAt, k.killed = 0, false
	k.serve(ln)
}

func (k *killable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.requests++
	die := k.killAt > 0 && k.requests == k.killAt
	if die {
		k.killed = true
		// Closed before this request is answered: a client's retry must
		// find the registry gone, not still listening.
		k.srv.Close()
	}
	k.mu.Unlock()
	if die {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		k.checkTagPut(r.URL.Path, body)
	}
	k.inner.ServeHTTP(w, r)
}

func (k *killable) checkTagPut(path string, body []byte) {
	v := tagPutViolation(path, body, func(repo, kind, d string) bool {
		rec := httptest.NewRecorder()
		k.inner.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/v2/"+repo+"/"+kind+"/"+d, nil))
		return rec.Code == http.StatusOK
	})
	if v != "" {
		k.mu.Lock()
		k.violations = append(k.violations, v)
		k.mu.Unlock()
	}
}

// tagPutViolation checks a manifest PUT to path (/v2/REPO/manifests/REF)
// with body: when REF is a tag, everything the manifest names (and, for a
// release tag, the manifest itself by digest) must already be in REPO.
// exists(repo, kind, digest) asks the registry; kind is "blobs" or
// "manifests". It returns the violation, or "" when the PUT is in order.
func tagPutViolation(path string, body []byte, exists func(repo, kind, d string) bool) string {
	i := strings.Index(path, "/manifests/")
	repo, ref := strings.TrimPrefix(path[:i], "/v2/"), path[i+len("/manifests/"):]
	if strings.HasPrefix(ref, "sha256:") {
		return ""
	}
	sum := sha256.Sum256(body)
	d := "sha256:" + hex.EncodeToString(sum[:])
	var m struct {
		Config    struct{ Digest string }   `json:"config"`
		Layers    []struct{ Digest string } `json:"layers"`
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	_ = json.Unmarshal(body, &m)
	var missing []string
	// Attachment tags (sha256-<hex>.sig/.att) are pushed by tag only.
	if !strings.HasPrefix(ref, "sha256-") && !exists(repo, "manifests", d) {
		missing = append(missing, "manifest "+d)
	}
	if m.Config.Digest != "" && !exists(repo, "blobs", m.Config.Digest) {
		missing = append(missing, "config "+m.Config.Digest)
	}
	for _, l := range m.Layers {
		if !exists(repo, "blobs", l.Digest) {
			missing = append(missing, "layer "+l.Digest)
		}
	}
	for _, c := range m.Manifests {
		if !exists(repo, "manifests", c.Digest) {
			missing = append(missing, "child "+c.Digest)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("tag %s:%s written before %v", repo, ref, missing)
}

// TestKilledMidPromotion kills the registry at every request of a
// promotion in turn, then starts it again and promotes again: the second
// run completes, and no tag ever resolved to a partial image.
func TestKilledMidPromotion(t *testing.T) {
	ctx := context.Background()
	k := newKillable(t)
	f := newFixture(t, k.addr)
	a, b := f.good(), f.good()
	total := 0
	for n := 1; ; n++ {
		f.release = fmt.Sprintf("%s/release/kill%d", k.addr, n)
		path := f.releaseFile(map[string]string{"2.6-cu124": b.DigestStr()},
			rel(a.String(), "2026-11", "2.6-cu124-2026.11"),
			rel(b.String(), "2026-12", "2.6-cu124-2026.12"))
		k.arm(n)
		_, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
		k.mu.Lock()
		killed := k.killed
		k.mu.Unlock()
		if !killed {
			if err != nil {
				t.Fatalf("Run without a kill = %v", err)
			}
			total = n - 1
			break
		}
		if err == nil {
			t.Fatalf("kill at request %d: Run = nil, want an error", n)
		}
		if re := (*promote.RefusedError)(nil); errors.As(err, &re) {
			t.Errorf("kill at request %d: Run = %v; a dead registry must not read as a gate refusal", n, err)
		}
		k.restart()
		// Between the runs: every tag that exists resolves to a whole image.
		assertTagsWhole(t, f.release)
		if _, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...); err != nil {
			t.Fatalf("kill at request %d: Run again = %v", n, err)
		}
		got := f.state(a, b)
		if got["tag 2.6-cu124"] != b.DigestStr() || got["tag 2.6-cu124-2026.11"] != a.DigestStr() || got["tag 2.6-cu124-2026.12"] != b.DigestStr() {
			t.Errorf("kill at request %d: after the second run: %v", n, got)
		}
		assertTagsWhole(t, f.release)
		res, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
		if err != nil || len(res.Actions) != 0 {
			t.Errorf("kill at request %d: third run = %d actions, %v; want none", n, len(res.Actions), err)
		}
	}
	if total < 5 {
		t.Errorf("a promotion took %d requests; the test killed it at too few points", total)
	}
	t.Logf("killed the registry at each of %d requests of a promotion", total)
	if len(k.violations) > 0 {
		t.Errorf("tags written before their image was whole:\n%s", strings.Join(k.violations, "\n"))
	}
}

func assertTagsWhole(t *testing.T, repoName string) {
	t.Helper()
	repo, _ := name.NewRepository(repoName)
	tags, err := remote.List(repo)
	if err != nil {
		return // no repository yet: no tag
	}
	for _, tag := range tags {
		img, err := remote.Image(repo.Tag(tag))
		if err != nil {
			t.Errorf("tag %s does not resolve: %v", tag, err)
			continue
		}
		if strings.HasPrefix(tag, "sha256-") {
			// cosign's signature images have non-layer media types that
			// validate.Image rejects; check that every blob is whole.
			if err := blobsWhole(img); err != nil {
				t.Errorf("tag %s resolves to a partial image: %v", tag, err)
			}
			continue
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("tag %s resolves to a partial image: %v", tag, err)
		}
	}
}

func blobsWhole(img v1.Image) error {
	if _, err := img.RawConfigFile(); err != nil {
		return err
	}
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range ls {
		want, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, rc)
		rc.Close()
		if err != nil {
			return err
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want.String() {
			return fmt.Errorf("layer %s reads as %s", want, got)
		}
	}
	return nil
}

// TestKillableDetectsEarlyTag shows the invariant check can fail: a plain
// push by tag writes the tag before the manifest exists by digest.
func TestKillableDetectsEarlyTag(t *testing.T) {
	k := newKillable(t)
	f := newFixture(t, k.addr)
	d := f.push(1)
	img, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustTag(t, k.addr+"/release/direct:latest"), img); err != nil {
		t.Fatal(err)
	}
	if len(k.violations) != 1 {
		t.Errorf("violations = %q, want one", k.violations)
	}
}

// TestUnreachableIsNotARefusal: a registry that does not answer is exit
// 69 (unavailable), never a gate refusal.
func TestUnreachableIsNotARefusal(t *testing.T) {
	k := newKillable(t)
	f := newFixture(t, k.addr)
	d := f.good()
	path := f.releaseFile(nil, rel(d.String(), "2026-12", "x-2026.12"))
	k.mu.Lock()
	k.srv.Close()
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
	var re *promote.RefusedError
	if err == nil || errors.As(err, &re) || exitcode.Code(err) != exitcode.Unavailable {
		t.Errorf("Run against a dead registry = %v (exit %d), want exit %d and no refusal", err, exitcode.Code(err), exitcode.Unavailable)
	}
	_, err = promote.Pin(ctx, mustTag(t, f.release+":x"), f.opts()...)
	if err == nil || errors.As(err, &re) {
		t.Errorf("Pin against a dead registry = %v, want an error that is no refusal", err)
	}
}
