package releasefile_test

import (
	"errors"
	"strings"
	"testing"

	"imagectl/internal/releasefile"
)

func TestParseStrict(t *testing.T) {
	d1 := "sha256:" + strings.Repeat("1", 64)
	good := `{"schema_version":1,"image":"x","repository":"r.example/ml/x",
	  "releases":[{"source":"r.example/s/x@` + d1 + `","tags":["1.0-2026.12"],"month":"2026-12"}],
	  "moving":{"1.0":"` + d1 + `"}}`
	if _, err := releasefile.Parse("good", []byte(good)); err != nil {
		t.Fatalf("Parse(good) = %v", err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"unknown field", `"image":"x"`, `"image":"x","extra":1`},
		{"schema version", `"schema_version":1`, `"schema_version":2`},
		{"no image", `"image":"x"`, `"image":""`},
		{"bad month", `"2026-12"`, `"2026-13"`},
		{"bad tag", `"1.0-2026.12"`, `"1.0 2026"`},
		{"no tags", `"tags":["1.0-2026.12"]`, `"tags":[]`},
		{"reserved tag", `"1.0-2026.12"`, `"sha256-abc.sig"`},
		{"moving to unknown digest", `"1.0":"` + d1 + `"`, `"1.0":"sha256:` + strings.Repeat("2", 64) + `"`},
		{"moving tag is a release tag", `"1.0":"`, `"1.0-2026.12":"`},
		{"trailing data", `}}`, `}} {}`},
		{"trailing brace", `}}`, `}}}`},
		{"trailing bracket", `}}`, `}}]`},
		{"bad repository", `"repository":"r.example/ml/x"`, `"repository":"R!"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(good, tc.from, tc.to, 1)
			if in == good {
				t.Fatalf("test case does not change the input")
			}
			_, err := releasefile.Parse("bad", []byte(in))
			var fe *releasefile.FormatError
			if !errors.As(err, &fe) {
				t.Errorf("Parse(%s) = %v, want a FormatError", tc.name, err)
			}
		})
	}
	// A tag as source parses (the digest gate refuses it, naming the gate).
	tagSrc := strings.Replace(good, "@"+d1, ":candidate", 1)
	tagSrc = strings.Replace(tagSrc, `,
	  "moving":{"1.0":"`+d1+`"}`, "", 1)
	if _, err := releasefile.Parse("tag source", []byte(tagSrc)); err != nil {
		t.Errorf("Parse(tag source) = %v, want nil (refused later by the digest gate)", err)
	}
}

func TestRecordIdempotent(t *testing.T) {
	path := t.TempDir() + "/releases.json"
	r := releasefile.Release{Source: "r.example/s/x@sha256:" + strings.Repeat("1", 64), Month: "2026-12", Tags: []string{"a"}}
	for i := 0; i < 2; i++ {
		if err := releasefile.Record(path, "x", "r.example/ml/x", r, "m"); err != nil {
			t.Fatal(err)
		}
	}
	f := mustRead(t, path)
	if len(f.Releases) != 1 || f.Moving["m"] != "sha256:"+strings.Repeat("1", 64) {
		t.Errorf("after recording twice: %+v", f)
	}
	if err := releasefile.Record(path, "y", "r.example/ml/x", r); err == nil {
		t.Error("Record into another image's file = nil, want an error")
	}
	r2 := releasefile.Release{Source: "r.example/s/x@sha256:" + strings.Repeat("2", 64), Month: "2026-12", Tags: []string{"a"}}
	if err := releasefile.Record(path, "x", "r.example/ml/x", r2); err == nil {
		t.Error("Record reusing a release tag = nil, want an error")
	}
	if err := releasefile.Record(path, "x", "r.example/ml/x", releasefile.Release{Source: "r.example/s/x:tag", Month: "2026-12", Tags: []string{"b"}}); err == nil {
		t.Error("Record of a tag = nil, want an error")
	}
}

func TestSupportEnd(t *testing.T) {
	src := "registry.example/ml/staging/demo@sha256:" + strings.Repeat("a", 64)
	f := &releasefile.File{SchemaVersion: releasefile.SchemaVersion, Image: "demo", Repository: "registry.example/ml/demo"}
	if err := f.Add(releasefile.Release{Source: src, Tags: []string{"demo-2026.11"}, Month: "2026-11"}); err != nil {
		t.Fatal(err)
	}
	// Recording the release again with its support end fills it in.
	if err := f.Add(releasefile.Release{Source: src, Tags: []string{"demo-2026.11"}, Month: "2026-11", SupportEnd: "2027-10-31"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Releases[0].SupportEnd; got != "2027-10-31" {
		t.Errorf("SupportEnd = %q, want 2027-10-31", got)
	}
	b, err := releasefile.Marshal(f)
	if err != nil || !strings.Contains(string(b), `"support_end": "2027-10-31"`) {
		t.Errorf("Marshal() = %s, %v", b, err)
	}
	bad := strings.Replace(string(b), "2027-10-31", "2027-13-01", 1)
	if _, err := releasefile.Parse("releases.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), "support_end") {
		t.Errorf("Parse(support_end 2027-13-01) = %v, want an error naming support_end", err)
	}
}

func mustRead(t *testing.T, path string) *releasefile.File {
	t.Helper()
	f, err := releasefile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
