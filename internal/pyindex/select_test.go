package pyindex

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"imagectl/internal/logs"
)

func TestSatisfiesPython(t *testing.T) {
	for _, tc := range []struct {
		spec, py string
		want     bool
	}{
		{"", "3.11", true},
		{">=3.8", "3.11", true},
		{">=3.12", "3.11", false},
		{">=3.7,<3.11", "3.11", false},
		{"!=3.11.*", "3.11.2", false},
		{"==3.11.*", "3.11.2", true},
		{"~=3.9", "3.11", true},
		{">3.10", "3.10", false},
	} {
		got, err := SatisfiesPython(tc.spec, tc.py)
		if err != nil || got != tc.want {
			t.Errorf("SatisfiesPython(%q, %q) = %v, %v; want %v", tc.spec, tc.py, got, err, tc.want)
		}
	}
	if _, err := SatisfiesPython("3.8", "3.11"); err == nil {
		t.Error("SatisfiesPython(3.8) = nil error, want no operator")
	}
}

func TestNewestPure(t *testing.T) {
	h := strings.Repeat("a", 64)
	files := []File{
		{Filename: "pip-22.0.2-py3-none-any.whl", SHA256: h},
		{Filename: "pip-23.0.1-py3-none-any.whl", SHA256: h},
		{Filename: "pip-24.0-py3-none-any.whl", SHA256: h, Yanked: true},
		{Filename: "pip-25.0-py3-none-any.whl", SHA256: h, RequiresPython: ">=3.12"},
		{Filename: "pip-23.1b1-py3-none-any.whl", SHA256: h},
		{Filename: "pip-23.2.tar.gz", SHA256: h},
		{Filename: "pip-23.3-py3-none-any.whl"},
	}
	f, err := NewestPure(context.Background(), files, "pip", "3.11", "22.2")
	if err != nil || f.Filename != "pip-23.0.1-py3-none-any.whl" {
		t.Errorf("NewestPure = %v, %v; want pip 23.0.1 (24.0 yanked, 25.0 needs 3.12, 23.3 has no hash)", f.Filename, err)
	}
	if _, err := NewestPure(context.Background(), files[:1], "pip", "3.11", "22.2"); err == nil {
		t.Error("NewestPure(pip 22.0.2 only) = nil error, want none >= 22.2")
	}
}

// TestNewestPureLogsBadRequiresPython: a candidate whose Requires-Python
// does not parse is left out, with a warning naming the file and the
// specifier.
func TestNewestPureLogsBadRequiresPython(t *testing.T) {
	h := strings.Repeat("a", 64)
	files := []File{
		{Filename: "pip-23.0.1-py3-none-any.whl", SHA256: h},
		{Filename: "pip-25.0-py3-none-any.whl", SHA256: h, RequiresPython: "3.8"},
	}
	var buf bytes.Buffer
	ctx := logs.With(context.Background(), slog.New(slog.NewTextHandler(&buf, nil)))
	f, err := NewestPure(ctx, files, "pip", "3.11", "22.2")
	if err != nil || f.Filename != "pip-23.0.1-py3-none-any.whl" {
		t.Errorf("NewestPure = %v, %v; want pip 23.0.1 (25.0's Requires-Python does not parse)", f.Filename, err)
	}
	if log := buf.String(); !strings.Contains(log, "pip-25.0-py3-none-any.whl") || !strings.Contains(log, "requires_python=3.8") {
		t.Errorf("log = %q, want a warning naming pip-25.0-py3-none-any.whl and its Requires-Python", log)
	}
}

func TestNormalizeNames(t *testing.T) {
	in := "Metadata-Version: 2.1\nName: Typing_Extensions\nVersion: 4.12.2\nRequires-Dist: Jinja2 (>=3); extra == \"x\"\nRequires-Dist:  mpmath<1.4\n\nName: body text stays\n"
	want := "Metadata-Version: 2.1\nName: typing-extensions\nVersion: 4.12.2\nRequires-Dist: jinja2 (>=3); extra == \"x\"\nRequires-Dist: mpmath<1.4\n\nName: body text stays\n"
	if got := string(normalizeNames([]byte(in))); got != want {
		t.Errorf("normalizeNames() =\n%s\nwant\n%s", got, want)
	}
}
