package resolve

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/lock"
)

func TestUpgrade(t *testing.T) {
	f := newFixture(t)
	img := f.demo()
	old, err := Image(context.Background(), img, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("periphery moves, frozen pinned as a constraint", func(t *testing.T) {
		f.runner.jobs = nil
		f.runner.wheels = []fakeWheel{
			{name: "demo-core", version: "1.0.0", requested: true},
			{name: "demo-util", version: "1.1.0", requested: true},
		}
		l, err := Upgrade(context.Background(), img, old, f.opts()...)
		if err != nil {
			t.Fatalf("Upgrade() = %v", err)
		}
		pj, _ := f.runner.job("pip resolve")
		if got, want := string(pj.Files["constraints.txt"]), "demo-core==1.0.0\n"; got != want {
			t.Errorf("constraints.txt = %q, want %q", got, want)
		}
		want := lock.Changes{Added: []lock.Package{}, Removed: []lock.Package{}, Changed: []lock.Change{{Kind: "pip", Name: "demo-util", From: "1.0.0", To: "1.1.0"}}}
		if d := cmp.Diff(want, lock.Diff(old, l)); d != "" {
			t.Errorf("Diff(old, upgraded) mismatch (-want +got):\n%s", d)
		}
		if _, ok := f.runner.job("apt resolve"); !ok {
			t.Error("a full upgrade did not re-resolve apt")
		}
	})

	t.Run("--package pins every other package and keeps apt", func(t *testing.T) {
		f.runner.jobs = nil
		f.runner.wheels = []fakeWheel{
			{name: "demo-core", version: "1.0.0", requested: true},
			{name: "demo-util", version: "1.1.0", requested: true},
		}
		if _, err := Upgrade(context.Background(), img, old, f.opts(WithPackages("demo-util"))...); err != nil {
			t.Fatalf("Upgrade(--package demo-util) = %v", err)
		}
		if _, ok := f.runner.job("apt resolve"); ok {
			t.Error("Upgrade(--package demo-util) re-resolved apt")
		}
		f.runner.jobs = nil
		f.old(t, old)
		if _, err := Upgrade(context.Background(), img, old, f.opts(WithPackages("jq"))...); err != nil {
			t.Fatalf("Upgrade(--package jq) = %v", err)
		}
		pj, _ := f.runner.job("pip resolve")
		if got, want := string(pj.Files["constraints.txt"]), "demo-core==1.0.0\ndemo-util==1.0.0\n"; got != want {
			t.Errorf("constraints.txt = %q, want %q", got, want)
		}
	})

	for _, tc := range []struct {
		name string
		opts []Option
		edit func()
		want string
	}{
		{name: "frozen package named", opts: []Option{WithPackages("demo-core")}, want: "--package demo-core is frozen"},
		{name: "unknown package", opts: []Option{WithPackages("nosuch")}, want: "--package nosuch is not in the lock"},
		{name: "spec moves the core", edit: func() { img.Python = "3.12" }, want: "the spec moves the frozen core (python 3.11 -> 3.12)"},
		{name: "frozen would move", edit: func() {
			f.runner.wheels = []fakeWheel{{name: "demo-core", version: "1.1.0"}, {name: "demo-util", version: "1.2.0", requested: true, requires: []string{"demo-core>=1.1"}}}
		}, want: "would move frozen demo-core 1.0.0 -> 1.1.0; pulled by: demo-util 1.2.0 (requested) requires demo-core>=1.1"},
		{name: "pip conflict names the held pins", edit: func() {
			f.runner.pipRC, f.runner.pipLog = "1", "The conflict is caused by:\n    The user requested (constraint) demo-core==1.0.0\n    demo-util 1.2.0 depends on demo-core>=1.1"
		}, want: "upgrade holds demo-core==1.0.0: image demo: pip could not resolve the requirements:\nThe conflict is caused by:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img = f.demo()
			f.old(t, old)
			if tc.edit != nil {
				tc.edit()
			}
			_, err := Upgrade(context.Background(), img, old, f.opts(tc.opts...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Upgrade() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// old resets the fake to answer what old was resolved from.
func (f *fixture) old(t *testing.T, old *lock.Lock) {
	t.Helper()
	f.runner.pipRC, f.runner.pipLog = "", ""
	f.runner.wheels = nil
	for _, w := range old.Pip {
		f.runner.wheels = append(f.runner.wheels, fakeWheel{name: w.Name, version: w.Version, requested: true})
	}
}

func TestUpgradeBaseMoves(t *testing.T) {
	f := newFixture(t)
	img := f.demo()
	old, err := Image(context.Background(), img, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	f.pushBase(t) // the tag moves upstream

	l, err := Upgrade(context.Background(), img, old, f.opts(WithPackages("demo-util"))...)
	if err != nil {
		t.Fatalf("Upgrade(--package demo-util) = %v", err)
	}
	if l.Base != old.Base {
		t.Errorf("Upgrade(--package demo-util) moved the base: %+v -> %+v", old.Base, l.Base)
	}

	l, err = Upgrade(context.Background(), img, old, f.opts()...)
	if err != nil {
		t.Fatalf("Upgrade() = %v", err)
	}
	c := lock.Diff(old, l)
	if len(c.Changed) != 1 || c.Changed[0].Kind != "base" || c.Changed[0].To != l.Base.ManifestDigest {
		t.Errorf("Diff(old, upgraded) = %+v, want the base's new digest %s", c, l.Base.ManifestDigest)
	}
}

// TestResolveAndUpgradeReturnSealedLocks checks that the locks Resolve and
// Upgrade return carry the digest of the file Write writes: builds label
// their images with it, also when the lock was never written.
func TestResolveAndUpgradeReturnSealedLocks(t *testing.T) {
	f := newFixture(t)
	img := f.demo()
	ctx := context.Background()
	old, err := Image(ctx, img, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	f.runner.jobs = nil
	f.runner.wheels = []fakeWheel{
		{name: "demo-core", version: "1.0.0", requested: true},
		{name: "demo-util", version: "1.1.0", requested: true},
	}
	up, err := Upgrade(ctx, img, old, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	for what, l := range map[string]*lock.Lock{"Resolve": old, "Upgrade": up} {
		got := l.Digest
		b, err := lock.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		back, err := lock.Parse(what, b)
		if err != nil {
			t.Fatal(err)
		}
		if got == "" || got != back.Digest {
			t.Errorf("%s returned Digest %q; the written lock's is %q", what, got, back.Digest)
		}
	}
	if old.Digest == up.Digest {
		t.Errorf("Upgrade moved demo-util and kept the digest %s", up.Digest)
	}
}
