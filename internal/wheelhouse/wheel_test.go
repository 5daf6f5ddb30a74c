package wheelhouse

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildDeterministic(t *testing.T) {
	s := Spec{Name: "demo-core", Version: "1.0.0", PayloadBytes: 3<<20 + 5}
	var a, b bytes.Buffer
	if err := Build(&a, s); err != nil {
		t.Fatal(err)
	}
	if err := Build(&b, s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("Build(%v) twice gave different bytes", s)
	}
	s2 := s
	s2.Version = "1.0.1"
	var c bytes.Buffer
	if err := Build(&c, s2); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatalf("Build of versions 1.0.0 and 1.0.1 gave the same bytes")
	}
	// Incompressible payload: the wheel is at least as big as the payload.
	if int64(a.Len()) < s.PayloadBytes {
		t.Errorf("wheel is %d bytes, want >= payload %d (payload must not compress)", a.Len(), s.PayloadBytes)
	}
}

func TestBuildContents(t *testing.T) {
	s := Spec{Name: "Demo_Util", Version: "2.1", Requires: []string{"demo-dep>=1", "other; python_version<'3'"}, RequiresPython: ">=3.9", PayloadBytes: 1000}
	if got, want := s.Filename(), "demo_util-2.1-py3-none-any.whl"; got != want {
		t.Errorf("Filename() = %q, want %q", got, want)
	}
	var buf bytes.Buffer
	if err := Build(&buf, s); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string][]byte{}
	var names []string
	for _, f := range zr.File {
		if !f.Modified.Equal(zipTime) {
			t.Errorf("%s: Modified = %v, want %v", f.Name, f.Modified, zipTime)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		contents[f.Name] = b
		names = append(names, f.Name)
	}
	wantNames := []string{
		"demo_util/__init__.py", "demo_util/payload.bin",
		"demo_util-2.1.dist-info/METADATA", "demo_util-2.1.dist-info/WHEEL", "demo_util-2.1.dist-info/RECORD",
	}
	if d := cmp.Diff(wantNames, names); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
	wantMeta := "Metadata-Version: 2.1\nName: Demo_Util\nVersion: 2.1\nSummary: imagectl test wheel Demo_Util\n" +
		"Requires-Python: >=3.9\nRequires-Dist: demo-dep>=1\nRequires-Dist: other; python_version<'3'\n"
	if d := cmp.Diff(wantMeta, string(contents["demo_util-2.1.dist-info/METADATA"])); d != "" {
		t.Errorf("METADATA (-want +got):\n%s", d)
	}
	if n := len(contents["demo_util/payload.bin"]); n != 1000 {
		t.Errorf("payload is %d bytes, want 1000", n)
	}
	// Every RECORD line but its own matches the entry's hash and size.
	record := strings.TrimSpace(string(contents["demo_util-2.1.dist-info/RECORD"]))
	lines := strings.Split(record, "\n")
	if len(lines) != len(wantNames) {
		t.Fatalf("RECORD has %d lines, want %d:\n%s", len(lines), len(wantNames), record)
	}
	for _, l := range lines {
		parts := strings.Split(l, ",")
		if len(parts) != 3 {
			t.Fatalf("RECORD line %q: want 3 fields", l)
		}
		if parts[0] == "demo_util-2.1.dist-info/RECORD" {
			if parts[1] != "" || parts[2] != "" {
				t.Errorf("RECORD's own line = %q, want no hash and size", l)
			}
			continue
		}
		b, ok := contents[parts[0]]
		if !ok {
			t.Errorf("RECORD names %q, not in the wheel", parts[0])
			continue
		}
		sum := sha256.Sum256(b)
		want := fmt.Sprintf("%s,sha256=%s,%d", parts[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(b))
		if l != want {
			t.Errorf("RECORD line = %q, want %q", l, want)
		}
	}
}

func TestBuildRejectsBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"empty name", Spec{Version: "1"}},
		{"bad name", Spec{Name: "a b", Version: "1"}},
		{"bad version", Spec{Name: "a", Version: "x.y"}},
		{"negative payload", Spec{Name: "a", Version: "1", PayloadBytes: -1}},
		{"newline requirement", Spec{Name: "a", Version: "1", Requires: []string{"b\nName: evil"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Build(io.Discard, tc.spec); err == nil {
				t.Errorf("Build(%+v) = nil, want an error", tc.spec)
			}
		})
	}
}
