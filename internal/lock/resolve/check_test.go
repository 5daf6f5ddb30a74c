package resolve

import (
	"context"
	"errors"
	"testing"

	"imagectl/internal/compat"
	"imagectl/internal/exitcode"
)

func TestCheck(t *testing.T) {
	f := newFixture(t)
	img := f.demo()
	l, err := Image(context.Background(), img, f.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	cat := WithCatalog(fakeCatalog{})
	if err := Check(context.Background(), img, l, cat); err != nil {
		t.Fatalf("Check(fresh lock) = %v, want nil", err)
	}

	moved := img
	moved.File, moved.Line, moved.Column = "specs/other.hcl", 90, 3
	if err := Check(context.Background(), moved, l, cat); err != nil {
		t.Errorf("Check(block moved to another file) = %v, want nil", err)
	}

	for _, tc := range []struct {
		name string
		edit func()
		opt  Option
		code int
	}{
		{name: "pip list edited", edit: func() { img.Pip = append(img.Pip, "demo-extra") }, opt: cat, code: exitcode.LockStale},
		{name: "env edited", edit: func() { img.Env = map[string]string{"A": "1"} }, opt: cat, code: exitcode.LockStale},
		{name: "runtime edited", edit: func() { img.Runtime.TmpDir = "/tmp/x" }, opt: cat, code: exitcode.LockStale},
		{name: "catalog changed", opt: WithCatalog(fakeCatalog{digest: "sha256:other"}), code: exitcode.LockStale},
		{name: "catalog rule now fails", opt: WithCatalog(fakeCatalog{problems: []compat.Problem{{Field: "torch", Summary: "no wheel"}}}), code: exitcode.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img = f.demo()
			if tc.edit != nil {
				tc.edit()
			}
			err := Check(context.Background(), img, l, tc.opt)
			if err == nil {
				t.Fatal("Check() = nil, want an error")
			}
			if got := exitcode.Code(err); got != tc.code {
				t.Errorf("exitcode.Code(Check()) = %d (%v), want %d", got, err, tc.code)
			}
			if tc.code == exitcode.LockStale {
				var se *StaleError
				if !errors.As(err, &se) {
					t.Errorf("Check() = %T, want *StaleError", err)
				}
			}
		})
	}
}
