package lock

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	old := &Lock{
		Base: Base{Ref: "r/base:bookworm", ManifestDigest: "sha256:aa"},
		Apt:  []Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64"}, {Name: "libold", Version: "1", Arch: "amd64"}},
		Pip:  []Wheel{{Name: "demo-core", Version: "1.0.0"}, {Name: "demo-util", Version: "1.0.0"}},
	}
	new := &Lock{
		Base: Base{Ref: "r/base:bookworm", ManifestDigest: "sha256:bb"},
		Apt:  []Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64"}},
		Pip:  []Wheel{{Name: "demo-core", Version: "1.0.0"}, {Name: "demo-util", Version: "1.1.0"}, {Name: "demo-extra", Version: "0.1"}},
	}
	got := Diff(old, new)
	want := Changes{
		Added:   []Package{{Kind: "pip", Name: "demo-extra", Version: "0.1"}},
		Removed: []Package{{Kind: "apt", Name: "libold", Version: "1"}},
		Changed: []Change{{Kind: "base", Name: "r/base:bookworm", From: "sha256:aa", To: "sha256:bb"}, {Kind: "pip", Name: "demo-util", From: "1.0.0", To: "1.1.0"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Diff() mismatch (-want +got):\n%s", d)
	}
	var buf bytes.Buffer
	if err := got.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	wantText := `~ base r/base:bookworm sha256:aa -> sha256:bb
~ pip  demo-util 1.0.0 -> 1.1.0
+ pip  demo-extra 0.1
- apt  libold 1
2 changed, 1 added, 1 removed
`
	if d := cmp.Diff(wantText, buf.String()); d != "" {
		t.Errorf("WriteText mismatch (-want +got):\n%s", d)
	}
	if c := Diff(old, old); !c.Empty() {
		t.Errorf("Diff(old, old) = %+v, want empty", c)
	}
}
