package spec_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
	"imagectl/internal/spec"
)

// want is the expectation a bad spec states on its first line:
// "# want: LINE GIST".
type want struct {
	line int
	gist string
}

func readWant(t *testing.T, path string) want {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	rest, ok := strings.CutPrefix(sc.Text(), "# want: ")
	if !ok {
		t.Fatalf("%s: first line must be \"# want: LINE GIST\"", path)
	}
	ls, gist, _ := strings.Cut(rest, " ")
	line, err := strconv.Atoi(ls)
	if err != nil || gist == "" {
		t.Fatalf("%s: bad want line %q", path, sc.Text())
	}
	return want{line, gist}
}

// Every bad spec fails with a diagnostic at the file and line it states,
// whose text carries the gist; the rendered text names the position too.
func TestBadSpecs(t *testing.T) {
	paths, err := filepath.Glob("testdata/bad/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 25 {
		t.Fatalf("only %d bad specs, want at least 25", len(paths))
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".hcl"), func(t *testing.T) {
			w := readWant(t, path)
			imgs, err := spec.Load(context.Background(), []string{path}, spec.WithEnv(noEnv))
			var de *spec.DiagnosticsError
			if !errors.As(err, &de) {
				t.Fatalf("Load(%s) = %d images, %v; want a *DiagnosticsError", path, len(imgs), err)
			}
			if got := exitcode.Code(err); got != exitcode.Failure {
				t.Errorf("exitcode.Code(Load(%s)) = %d, want %d", path, got, exitcode.Failure)
			}
			var seen []string
			found := false
			for _, d := range de.List() {
				seen = append(seen, fmt.Sprintf("%s:%d: %s: %s", d.File, d.Line, d.Summary, d.Detail))
				if d.File == path && d.Line == w.line && strings.Contains(d.Summary+" "+d.Detail, w.gist) {
					found = true
				}
			}
			if !found {
				t.Errorf("Load(%s): no diagnostic at line %d containing %q; got:\n%s", path, w.line, w.gist, strings.Join(seen, "\n"))
			}
			var buf bytes.Buffer
			if err := de.WriteText(&buf, 100, false); err != nil {
				t.Fatalf("WriteText: %v", err)
			}
			if pos := fmt.Sprintf("on %s line %d", path, w.line); !strings.Contains(buf.String(), pos) {
				t.Errorf("WriteText does not show %q:\n%s", pos, buf.String())
			}
			if strings.Contains(buf.String(), "goroutine ") || strings.Contains(buf.String(), "panic") {
				t.Errorf("WriteText shows a Go stack trace:\n%s", buf.String())
			}
		})
	}
}
