package release

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/testenv"
)

// TestReleaseDemoEndToEnd runs the whole pipeline on the demo spec against
// the real buildkitd, registry and containerd: lock, build, sign, verify (in
// a containerd container pulled by digest, through the image's init),
// promote (accepting only a container runtime's result); then pins the release tag,
// re-runs (everything resumes, nothing changes) and does the next month's
// release after a newer periphery wheel appeared: only the periphery layers
// change, the changelog names the package, the old release stays pinnable.
func TestReleaseDemoEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dr := newDemoRelease(t, ctx, "e2e-release", 8<<20)
	imgs, images := dr.imgs, dr.images
	signPub, verPub := dr.keys.signPub, dr.keys.verPub
	stages := func(month string) *Real { return dr.stages(t, month) }

	// First release.
	out, err := Run(ctx, imgs, stages("2026-11"))
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	oc := out[0]
	if oc.Previous != "" || oc.Digest == "" {
		t.Errorf("first release: Previous = %q, Digest = %q; want no previous and a digest", oc.Previous, oc.Digest)
	}
	wantRef := imgs[0].Repos.Release + "@" + oc.Digest
	if oc.Promoted.Reference != wantRef {
		t.Errorf("Promoted.Reference = %q, want %q", oc.Promoted.Reference, wantRef)
	}
	if oc.Result == nil || !oc.Result.Passed || oc.Result.Digest != oc.Digest {
		t.Fatalf("verification result = %+v, want passed for %s", oc.Result, oc.Digest)
	}
	// The release's metrics (imagectl release --metrics-file): Prometheus
	// parses them, and over their samples no alert fires (the release
	// passed, just now) while the release time and success are there.
	metrics := filepath.Join(t.TempDir(), "imagectl-release.prom")
	if err := WriteTextfile(metrics, out, time.Now()); err != nil {
		t.Fatalf("WriteTextfile() = %v", err)
	}
	testenv.CheckMetrics(t, metrics)
	testenv.EvalRules(t, metrics, nil, map[string]float64{
		`sum(imagectl_release_success{image="demo"})`:             1,
		`count(imagectl_release_timestamp_seconds{image="demo"})`: 1,
		`count(imagectl_verify_timestamp_seconds{image="demo"})`:  1,
	})
	rf, err := releasefile.ReadFile(filepath.Join(images, "demo", releasefile.FileName))
	if err != nil {
		t.Fatalf("reading the release file: %v", err)
	}
	if len(rf.Releases) != 1 || rf.Releases[0].Source != oc.Ref || rf.Moving["demo"] != oc.Digest {
		t.Errorf("release file = %+v, want one release of %s with the moving tag demo", rf, oc.Ref)
	}
	if b, err := os.ReadFile(oc.Promoted.Changelog); err != nil || !strings.Contains(string(b), "First release") {
		t.Errorf("changelog %s = %q, %v; want a first-release note", oc.Promoted.Changelog, b, err)
	}
	if d, err := name.NewDigest(oc.Ref); err != nil {
		t.Errorf("release ref %q: %v", oc.Ref, err)
	} else if l, err := lock.Read(lock.Path(images, "demo")); err != nil {
		t.Error(err)
	} else {
		checkSBOM(t, ctx, d, signPub, l)
	}

	// A refused promotion (signatures checked against the wrong key) changes
	// neither the release file nor the release repository's tags.
	relFile := filepath.Join(images, "demo", releasefile.FileName)
	before, err := os.ReadFile(relFile)
	if err != nil {
		t.Fatal(err)
	}
	wrong := stages("2026-10")
	wrong.cfg.PublicKey = verPub
	l, err := lock.Read(lock.Path(images, "demo"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := name.NewDigest(oc.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Promote(ctx, l, d); exitcode.Code(err) != exitcode.PromotionRefused {
		t.Errorf("Promote with the wrong trusted key = %v (exit %d), want a refusal (exit %d)", err, exitcode.Code(err), exitcode.PromotionRefused)
	}
	if after, _ := os.ReadFile(relFile); !bytes.Equal(before, after) {
		t.Errorf("a refused promotion changed %s:\n%s\nwant\n%s", relFile, after, before)
	}
	if tag, err := name.NewTag(imgs[0].Repos.Release + ":demo-2026.10"); err == nil {
		if _, err := remote.Head(tag); err == nil {
			t.Errorf("a refused promotion wrote the tag %s", tag)
		}
	}

	// Users pin the moving tag: the digest comes back only after the gates.
	tag, err := name.NewTag(imgs[0].Repos.Release + ":demo")
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := promote.Pin(ctx, tag, promote.WithTrustedKeys(signPub), promote.WithVerifierKeys(verPub))
	if err != nil {
		t.Fatalf("Pin(%s) = %v", tag, err)
	}
	if pinned.Ref != wantRef {
		t.Errorf("Pin(%s) = %s, want %s", tag, pinned.Ref, wantRef)
	}

	// A re-run resumes: same digest, signing and verification found done.
	again, err := Run(ctx, imgs, stages("2026-11"))
	if err != nil {
		t.Fatalf("second Run() = %v", err)
	}
	if again[0].Digest != oc.Digest {
		t.Errorf("second run digest = %s, want %s (same lock, same image)", again[0].Digest, oc.Digest)
	}
	if got := strings.Join(again[0].Resumed, ","); got != StageSign+","+StageVerify {
		t.Errorf("second run resumed %q, want sign,verify", got)
	}

	// Next month: a newer periphery wheel is out; the upgrade moves it and
	// keeps the frozen demo-core.
	dr.nextMonth(t, ctx)
	next, err := Run(ctx, imgs, stages("2026-12"))
	if err != nil {
		t.Fatalf("next month's Run() = %v", err)
	}
	n := next[0]
	if n.Previous != oc.Ref || n.Digest == oc.Digest {
		t.Errorf("next month: Previous = %q, Digest = %s; want the previous release %q and a new digest", n.Previous, n.Digest, oc.Ref)
	}
	if n.Changed == 0 || n.Changed >= n.Layers || n.Delta >= n.Size/4 {
		t.Errorf("next month changed %d of %d layers, %d of %d bytes; want only the small periphery layers", n.Changed, n.Layers, n.Delta, n.Size)
	}
	b, err := os.ReadFile(n.Promoted.Changelog)
	if err != nil || !strings.Contains(string(b), "demo-util") || !strings.Contains(string(b), "1.1.0") || !strings.Contains(string(b), "demo-2026.11") {
		t.Errorf("changelog %s = %q, %v; want demo-util 1.1.0 since demo-2026.11", n.Promoted.Changelog, b, err)
	}
	if strings.Contains(string(b), "demo-core") {
		t.Errorf("changelog %s mentions the frozen demo-core:\n%s", n.Promoted.Changelog, b)
	}

	// Both months are pinnable: the moving tag follows, old releases stay.
	for tg, want := range map[string]string{
		"demo-2026.11": wantRef,
		"demo-2026.12": imgs[0].Repos.Release + "@" + n.Digest,
		"demo":         imgs[0].Repos.Release + "@" + n.Digest,
	} {
		tag, err := name.NewTag(imgs[0].Repos.Release + ":" + tg)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := promote.Pin(ctx, tag, promote.WithTrustedKeys(signPub), promote.WithVerifierKeys(verPub)); err != nil || p.Ref != want {
			t.Errorf("Pin(%s) = %+v, %v; want %s", tag, p, err, want)
		}
	}
}
