package promote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/logs"
	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

func mkdirTemp() (string, error) { return os.MkdirTemp("", "imagectl-promote-keys-") }

func TestMain(m *testing.M) {
	code := m.Run()
	for _, k := range cachedKeys {
		os.RemoveAll(strings.TrimSuffix(k.priv, "/"+sign.PrivateKeyFile))
	}
	os.Exit(code)
}

func rel(src string, month string, tags ...string) releasefile.Release {
	return releasefile.Release{Source: src, Month: month, Tags: tags}
}

func TestRefusals(t *testing.T) {
	testRefusals(t, newInProcessRegistry(t), "release")
}

// TestRefusalsRealRegistry runs every refusal against the distribution
// registry `make up` started.
func TestRefusalsRealRegistry(t *testing.T) {
	env := testenv.Get(t)
	testRefusals(t, env.Registry, fmt.Sprintf("e2e-%d/release", time.Now().UnixNano()))
}

func testRefusals(t *testing.T, reg, releasePrefix string) {
	for _, tc := range []struct {
		name string
		gate promote.Gate
		// setup returns the release's source reference.
		setup func(f *fixture) string
	}{{
		name: "unsigned", gate: promote.GateSignature,
		setup: func(f *fixture) string {
			d := f.push(1)
			f.attestLock(d, f.lock, f.signer)
			f.attestVerification(d, f.passing(d), f.ver)
			return d.String()
		},
	}, {
		name: "wrong key", gate: promote.GateSignature,
		setup: func(f *fixture) string {
			d := f.push(1)
			f.sign(d, f.other)
			f.attestLock(d, f.lock, f.signer)
			f.attestVerification(d, f.passing(d), f.ver)
			return d.String()
		},
	}, {
		name: "signature for another digest", gate: promote.GateSignature,
		setup: func(f *fixture) string {
			a := f.good()
			d := f.push(1)
			f.attestLock(d, f.lock, f.signer)
			f.attestVerification(d, f.passing(d), f.ver)
			// Copy a's signature image to d's signature tag.
			aSig, _ := ociremote.SignatureTag(a)
			dSig, _ := ociremote.SignatureTag(d)
			sig, err := remote.Image(aSig)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(dSig, sig); err != nil {
				t.Fatal(err)
			}
			return d.String()
		},
	}, {
		name: "no verification attestation", gate: promote.GateVerification,
		setup: func(f *fixture) string {
			d := f.push(1)
			f.sign(d, f.signer)
			f.attestLock(d, f.lock, f.signer)
			return d.String()
		},
	}, {
		name: "failed verification", gate: promote.GateVerification,
		setup: func(f *fixture) string {
			d := f.push(1)
			f.sign(d, f.signer)
			f.attestLock(d, f.lock, f.signer)
			r := f.passing(d)
			r.Passed = false
			r.Checks = []verify.Check{{Name: "nccl.allreduce", Status: verify.Fail}}
			f.attestVerification(d, r, f.ver)
			return d.String()
		},
	}, {
		name: "verification of another digest", gate: promote.GateVerification,
		setup: func(f *fixture) string {
			a := f.push(1)
			d := f.push(1)
			f.sign(d, f.signer)
			f.attestLock(d, f.lock, f.signer)
			f.attestVerification(d, f.passing(a), f.ver)
			return d.String()
		},
	}, {
		name: "verification by an untrusted key", gate: promote.GateVerification,
		setup: func(f *fixture) string {
			d := f.push(1)
			f.sign(d, f.signer)
			f.attestLock(d, f.lock, f.signer)
			f.attestVerification(d, f.passing(d), f.other)
			return d.String()
		},
	}, {
		name: "lock mismatch", gate: promote.GateLock,
		setup: func(f *fixture) string {
			d := f.push(1)
			f.sign(d, f.signer)
			other := testLock()
			other.Pip[0].Version = "2.0.0"
			if _, err := lockMarshal(other); err != nil {
				t.Fatal(err)
			}
			f.attestLock(d, other, f.signer)
			r := f.passing(d)
			f.attestVerification(d, r, f.ver)
			return d.String()
		},
	}, {
		name: "no lock attestation", gate: promote.GateLock,
		setup: func(f *fixture) string {
			d := f.push(1)
			f.sign(d, f.signer)
			f.attestVerification(d, f.passing(d), f.ver)
			return d.String()
		},
	}, {
		name: "tag instead of digest", gate: promote.GateDigest,
		setup: func(f *fixture) string {
			d := f.good()
			tag := d.Context().Tag("candidate")
			img, err := remote.Image(d)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(tag, img); err != nil {
				t.Fatal(err)
			}
			return tag.String()
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, reg)
			f.release = reg + "/" + releasePrefix + "/" + strings.ReplaceAll(tc.name, " ", "-")
			// A good release alongside: it must not be copied either.
			good := f.good()
			src := tc.setup(f)
			path := f.releaseFile(map[string]string{"2.6-cu124": good.DigestStr()},
				rel(good.String(), "2026-11", "2.6-cu124-2026.11"),
				rel(src, "2026-12", "2.6-cu124-2026.12"))
			before := f.state(good)
			for _, confirm := range []bool{false, true} {
				_, err := promote.Run(context.Background(), path, f.opts(promote.WithConfirm(confirm))...)
				var re *promote.RefusedError
				if !errors.As(err, &re) {
					t.Fatalf("Run(confirm=%v) = %v, want a refusal by gate %s", confirm, err, tc.gate)
				}
				if !re.Has(tc.gate) {
					t.Errorf("Run(confirm=%v) refused by %v, want gate %s", confirm, re.Refusals, tc.gate)
				}
				for _, r := range re.Refusals {
					if r.Source == good.String() {
						t.Errorf("the good release was refused: %v", r)
					}
				}
				if got := exitcode.Code(err); got != exitcode.PromotionRefused {
					t.Errorf("exit code = %d, want %d", got, exitcode.PromotionRefused)
				}
				if !strings.Contains(err.Error(), "gate "+string(tc.gate)) {
					t.Errorf("error %q does not name the gate", err)
				}
			}
			if diff := cmp.Diff(before, f.state(good)); diff != "" {
				t.Errorf("release repository changed after a refusal (-before +after):\n%s", diff)
			}
			if len(before) != 0 {
				t.Errorf("release repository was not empty before: %v", before)
			}
		})
	}
}

func TestImmutableTag(t *testing.T) {
	f := newFixture(t, newInProcessRegistry(t))
	a, b := f.good(), f.good()
	path := f.releaseFile(nil, rel(a.String(), "2026-11", "2.6-cu124-2026.11"))
	if _, err := promote.Run(context.Background(), path, f.opts(promote.WithConfirm(true))...); err != nil {
		t.Fatal(err)
	}
	// Someone edits the file to point the released tag at another digest.
	path = f.releaseFile(nil, rel(b.String(), "2026-11", "2.6-cu124-2026.11"))
	before := f.state(a, b)
	_, err := promote.Run(context.Background(), path, f.opts(promote.WithConfirm(true))...)
	var re *promote.RefusedError
	if !errors.As(err, &re) || !re.Has(promote.GateImmutableTag) {
		t.Fatalf("Run = %v, want a refusal by gate %s", err, promote.GateImmutableTag)
	}
	if diff := cmp.Diff(before, f.state(a, b)); diff != "" {
		t.Errorf("release repository changed (-before +after):\n%s", diff)
	}
}

func TestPromote(t *testing.T) {
	ctx := context.Background()
	var logBuf bytes.Buffer
	ctx = logs.With(ctx, slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	f := newFixture(t, newInProcessRegistry(t))
	nov := f.good()
	path := f.releaseFile(map[string]string{"2.6-cu124": nov.DigestStr()},
		rel(nov.String(), "2026-11", "2.6-cu124-2026.11"))

	// Dry run: a plan, nothing written.
	res, err := promote.Run(ctx, path, f.opts()...)
	if err != nil {
		t.Fatalf("dry run = %v", err)
	}
	if !res.DryRun || len(res.Actions) != 5 { // image, .sig, .att, 2 tags
		t.Errorf("dry run = %+v, want 5 planned actions", res)
	}
	if got := f.state(nov); len(got) != 0 {
		t.Errorf("dry run wrote %v", got)
	}

	res, err = promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	var kinds []string
	for _, a := range res.Actions {
		if !a.Done {
			t.Errorf("action %+v not done", a)
		}
		kinds = append(kinds, string(a.Kind))
	}
	wantKinds := []string{"copy-image", "copy-attachment", "copy-attachment", "set-tag", "set-tag"}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("action order (-want +got):\n%s", diff)
	}
	sigTag := "tag " + strings.Replace(nov.DigestStr(), ":", "-", 1)
	want := map[string]string{
		"tag 2.6-cu124-2026.11":       nov.DigestStr(),
		"tag 2.6-cu124":               nov.DigestStr(),
		"manifest " + nov.DigestStr(): "present",
	}
	got := f.state(nov)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("release repository %s = %q, want %q", k, got[k], v)
		}
	}
	if got[sigTag+".sig"] == "" || got[sigTag+".att"] == "" {
		t.Errorf("signatures and attestations not copied along: %v", got)
	}
	// The release repository verifies on its own.
	rd, _ := name.NewDigest(f.release + "@" + nov.DigestStr())
	if err := sign.VerifySignature(ctx, rd, f.signer.pub); err != nil {
		t.Errorf("VerifySignature(release) = %v", err)
	}
	pinned, err := promote.Pin(ctx, mustTag(t, f.release+":2.6-cu124"), f.opts()...)
	if err != nil {
		t.Fatalf("Pin = %v", err)
	}
	if pinned.Ref != rd.String() || pinned.Lock.Digest != f.lock.Digest || pinned.Lock.Torch != "2.6.0" {
		t.Errorf("Pin = %+v, want %s with lock %s", pinned, rd, f.lock.Digest)
	}

	// Second run: nothing to do.
	res, err = promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
	if err != nil || len(res.Actions) != 0 || len(res.InSync) != 1 {
		t.Errorf("second Run = %+v, %v; want no actions", res, err)
	}

	// December: releasefile.Record adds a release and moves the moving tag; November stays.
	dec := f.good()
	if err := releasefile.Record(path, f.lock.Name, f.release, releasefile.Release{Source: dec.String(), Month: "2026-12", Tags: []string{"2.6-cu124-2026.12"}, LockDigest: f.lock.Digest}, "2.6-cu124"); err != nil {
		t.Fatal(err)
	}
	res, err = promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
	if err != nil {
		t.Fatalf("Run(December) = %v", err)
	}
	got = f.state(nov, dec)
	if got["tag 2.6-cu124"] != dec.DigestStr() || got["tag 2.6-cu124-2026.11"] != nov.DigestStr() || got["tag 2.6-cu124-2026.12"] != dec.DigestStr() {
		t.Errorf("after December: %v", got)
	}
	var moved *promote.Action
	for i, a := range res.Actions {
		if a.Target == f.release+":2.6-cu124" {
			moved = &res.Actions[i]
		}
	}
	if moved == nil || moved.From != nov.DigestStr() || moved.Digest != dec.DigestStr() {
		t.Errorf("moving tag action = %+v, want %s -> %s", moved, nov.DigestStr(), dec.DigestStr())
	}
	list := promote.List(mustRead(t, path))
	if len(list) != 3 || list[0].Tag != "2.6-cu124" || !list[0].Moving || list[0].Month != "2026-12" {
		t.Errorf("List = %+v", list)
	}

	// No key material in the logs.
	for _, k := range []string{password, f.signer.priv} {
		b, _ := os.ReadFile(f.signer.priv)
		if strings.Contains(logBuf.String(), k) || bytes.Contains(logBuf.Bytes(), b[40:80]) {
			t.Errorf("logs contain key material")
		}
	}
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

func mustRead(t *testing.T, path string) *releasefile.File {
	t.Helper()
	f, err := releasefile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPromoteIndex promotes a multi-platform index: the index and its
// child manifests land in the release repository, and the tag resolves.
func TestPromoteIndex(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, newInProcessRegistry(t))
	idx, err := random.Index(1024, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := idx.Digest()
	d, _ := name.NewDigest(f.staging + "@" + h.String())
	if err := remote.WriteIndex(d, idx); err != nil {
		t.Fatal(err)
	}
	f.sign(d, f.signer)
	f.attestLock(d, f.lock, f.signer)
	f.attestBuild(d, f.signer)
	f.attestVerification(d, f.passing(d), f.ver)
	path := f.releaseFile(nil, rel(d.String(), "2026-12", "multi-2026.12"))
	res, err := promote.Run(ctx, path, f.opts(promote.WithConfirm(true))...)
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if len(res.Gated) != 1 || res.Gated[0] != d.String() {
		t.Errorf("Gated = %v, want [%s]", res.Gated, d)
	}
	got, err := remote.Index(mustTag(t, f.release+":multi-2026.12"))
	if err != nil {
		t.Fatalf("reading the promoted index: %v", err)
	}
	im, _ := got.IndexManifest()
	repo, _ := name.NewRepository(f.release)
	for _, m := range im.Manifests {
		if _, err := remote.Image(repo.Digest(m.Digest.String())); err != nil {
			t.Errorf("child %s not in the release repository: %v", m.Digest, err)
		}
	}
}
