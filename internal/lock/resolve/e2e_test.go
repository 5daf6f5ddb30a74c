package resolve

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// loadDemo loads specs/demo.hcl pointed at the environment's registry and
// wheel index.
func loadDemo(t testing.TB, env testenv.Env) spec.Image {
	t.Helper()
	imgs, err := spec.Load(context.Background(), []string{filepath.Join(env.Root, "specs", "demo.hcl")},
		spec.WithVars(map[string]string{"registry": env.Registry, "wheel_index": env.WheelIndex}))
	if err != nil {
		t.Fatalf("loading the demo spec: %v", err)
	}
	if len(imgs) != 1 || imgs[0].Name != "demo" {
		t.Fatalf("specs/demo.hcl gave %d images, want the one named demo", len(imgs))
	}
	return imgs[0]
}

func e2eContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestE2ELockDemo locks the demo spec on the real buildkitd, registry,
// wheel index and Debian mirror: twice byte-identical, stale after a spec
// edit, tampered after a lock edit.
func TestE2ELockDemo(t *testing.T) {
	env := testenv.Get(t)
	ctx := e2eContext(t)
	img := loadDemo(t, env)
	dir := t.TempDir()
	opts := []Option{WithBuildkit(env.BuildkitHost), WithRoot(env.Root)}

	if err := LockAll(ctx, dir, []spec.Image{img}, opts...); err != nil {
		t.Fatalf("locking demo: %v", err)
	}
	path := lock.Path(dir, img.Name)
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Parse(path, first)
	if err != nil {
		t.Fatalf("Parse(written lock) = %v", err)
	}
	if !hasDeb(l, "jq") {
		t.Errorf("lock apt = %v, want jq among them", l.Apt)
	}
	for _, d := range l.Apt {
		if d.Size <= 0 || len(d.SHA256) != 64 || !strings.HasSuffix(d.URL, ".deb") {
			t.Errorf("deb %+v lacks size, sha256 or URL", d)
		}
	}
	for _, n := range []string{"demo-core", "demo-util"} {
		w, ok := wheel(l, n)
		if !ok || w.Size <= 0 || len(w.SHA256) != 64 {
			t.Errorf("lock pip %s = %+v (found %v), want it with size and sha256", n, w, ok)
		}
	}
	if l.Base.ManifestDigest == "" || l.Base.IndexDigest == "" {
		t.Errorf("lock base = %+v, want digests", l.Base)
	}
	t.Logf("demo: %d debs, %d wheels, base %s", len(l.Apt), len(l.Pip), l.Base.ManifestDigest)

	if err := LockAll(ctx, dir, []spec.Image{img}, opts...); err != nil {
		t.Fatalf("locking demo again: %v", err)
	}
	second, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("re-locking demo is not byte-identical (-first +second):\n%s", cmp.Diff(string(first), string(second)))
	}

	if _, err := CheckAll(ctx, dir, []spec.Image{img}); err != nil {
		t.Errorf("CheckAll(fresh lock) = %v, want nil", err)
	}
	edited := img
	edited.Apt = append(append([]string{}, img.Apt...), "curl")
	_, err = CheckAll(ctx, dir, []spec.Image{edited})
	if got := exitcode.Code(err); got != exitcode.LockStale {
		t.Errorf("CheckAll(edited spec) = %v (code %d), want code %d", err, got, exitcode.LockStale)
	}
	if err := os.WriteFile(path, bytes.Replace(first, []byte(`"name": "jq"`), []byte(`"name": "jq2"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = CheckAll(ctx, dir, []spec.Image{img})
	if got := exitcode.Code(err); got != exitcode.LockTampered {
		t.Errorf("CheckAll(edited lock) = %v (code %d), want code %d", err, got, exitcode.LockTampered)
	}
}

// TestE2EUpgrade: a newer periphery wheel moves with --upgrade and the diff
// shows it; a newer frozen wheel does not move; a periphery wheel that needs
// a newer frozen one fails with pip's explanation; conflicting pins fail
// with pip's explanation.
func TestE2EUpgrade(t *testing.T) {
	env := testenv.Get(t)
	ctx := e2eContext(t)
	ix := withPip(t, testenv.NewWheelIndex(t,
		wheelhouse.Spec{Name: "demo-core", Version: "1.0.0"},
		wheelhouse.Spec{Name: "demo-util", Version: "1.0.0", Requires: []string{"demo-core>=1.0"}},
	))
	img := loadDemo(t, env)
	// Unpinned, so only the frozen list holds demo-core still.
	img.Pip = []string{"demo-core", "demo-util"}
	img.PipIndexes = []string{ix.URL}
	opts := []Option{WithBuildkit(env.BuildkitHost)}

	old, err := Image(ctx, img, opts...)
	if err != nil {
		t.Fatalf("Image(demo on the local index) = %v", err)
	}
	if v := wheelVersion(old, "demo-util"); v != "1.0.0" {
		t.Fatalf("locked demo-util %s, want 1.0.0", v)
	}

	ix.Publish(t, wheelhouse.Spec{Name: "demo-util", Version: "1.1.0", Requires: []string{"demo-core>=1.0"}})
	ix.Publish(t, wheelhouse.Spec{Name: "demo-core", Version: "1.1.0"})
	up, err := Upgrade(ctx, img, old, opts...)
	if err != nil {
		t.Fatalf("Upgrade() = %v", err)
	}
	want := lock.Changes{Added: []lock.Package{}, Removed: []lock.Package{}, Changed: []lock.Change{{Kind: "pip", Name: "demo-util", From: "1.0.0", To: "1.1.0"}}}
	if d := cmp.Diff(want, lock.Diff(old, up)); d != "" {
		t.Errorf("Diff(old, upgraded) mismatch (-want +got):\n%s", d)
	}
	var text bytes.Buffer
	lock.Diff(old, up).WriteText(&text)
	if !strings.Contains(text.String(), "demo-util 1.0.0 -> 1.1.0") {
		t.Errorf("diff text = %q, want demo-util 1.0.0 -> 1.1.0", text.String())
	}
	// Without the frozen list, the same resolution moves demo-core: the
	// upgrade held it, not the index.
	free, err := Image(ctx, img, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if v := wheelVersion(free, "demo-core"); v != "1.1.0" {
		t.Errorf("a fresh lock has demo-core %s, want 1.1.0 (the test index must offer a newer frozen package)", v)
	}

	t.Run("periphery needing a newer frozen package", func(t *testing.T) {
		ix.Publish(t, wheelhouse.Spec{Name: "demo-util", Version: "1.2.0", Requires: []string{"demo-core>=1.1"}})
		pinned := img
		pinned.Pip = []string{"demo-core", "demo-util==1.2.0"}
		_, err := Upgrade(ctx, pinned, old, opts...)
		var pe *PipError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "demo-core==1.0.0") || !strings.Contains(err.Error(), "demo-util") {
			t.Fatalf("Upgrade(demo-util==1.2.0 needing demo-core>=1.1) = %v, want pip's explanation naming demo-util and the held demo-core==1.0.0", err)
		}
		t.Logf("pip said: %v", err)
	})

	t.Run("conflicting pins", func(t *testing.T) {
		bad := img
		bad.Pip = []string{"demo-core==1.0.0", "demo-util==1.2.0"}
		_, err := Image(ctx, bad, opts...)
		var pe *PipError
		if !errors.As(err, &pe) || !strings.Contains(pe.Output, "conflict") {
			t.Fatalf("Image(conflicting pins) = %v, want pip's explanation of the conflict", err)
		}
		t.Logf("pip said: %v", err)
	})
}

func hasDeb(l *lock.Lock, name string) bool {
	for _, d := range l.Apt {
		if d.Name == name {
			return true
		}
	}
	return false
}

func wheel(l *lock.Lock, name string) (lock.Wheel, bool) {
	for _, w := range l.Pip {
		if w.Name == name {
			return w, true
		}
	}
	return lock.Wheel{}, false
}

func wheelVersion(l *lock.Lock, name string) string {
	w, _ := wheel(l, name)
	return w.Version
}

// BenchmarkLockDemo measures a full lock of the demo spec against the bare
// apt and pip resolutions it drives (the same two BuildKit solves, without
// base resolution, parsing, size requests or the lock file), in one run,
// and reports their ratio. Target: <= 1.2.
func BenchmarkLockDemo(b *testing.B) {
	env := testenv.Get(b)
	ctx := context.Background()
	img := loadDemo(b, env)
	dir := b.TempDir()
	r := &buildkitRunner{addr: env.BuildkitHost}
	l, err := Image(ctx, img, WithRunner(r))
	if err != nil {
		b.Fatal(err)
	}
	pinned := l.Base.Pull()
	aptScript, err := aptScript(img.Apt, img.Python)
	if err != nil {
		b.Fatal(err)
	}
	req := pipRequest{Requirements: img.Pip, Index: l.PipIndexes[0], Python: img.Python, Resolver: l.Resolver, ResolverURL: l.Resolver.URL}
	files, pipScript, err := req.files()
	if err != nil {
		b.Fatal(err)
	}
	var full, bare time.Duration
	lockOnce := func() {
		start := time.Now()
		if err := LockAll(ctx, dir, []spec.Image{img}, WithRunner(r)); err != nil {
			b.Fatal(err)
		}
		full += time.Since(start)
	}
	bareOnce := func() {
		start := time.Now()
		if _, err := r.Run(ctx, Job{Name: "apt resolve", Image: pinned, Script: aptScript}); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Run(ctx, Job{Name: "pip resolve", Image: pinned, Debs: l.Apt, Files: files, Script: pipScript, Resolver: &l.Resolver}); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(start)
	}
	b.ResetTimer()
	// Alternate the order so that drift (mirror, load) does not favour one.
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			lockOnce()
			bareOnce()
		} else {
			bareOnce()
			lockOnce()
		}
	}
	n := float64(b.N)
	b.ReportMetric(full.Seconds()/n, "lock-s/op")
	b.ReportMetric(bare.Seconds()/n, "bare-s/op")
	b.ReportMetric(full.Seconds()/bare.Seconds(), "lock/bare")
}
