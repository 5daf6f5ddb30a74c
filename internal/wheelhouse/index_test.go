package wheelhouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPublishAndIndex(t *testing.T) {
	dir := t.TempDir()
	f1, err := Publish(dir, Spec{Name: "demo-dep", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "files", f1.Filename))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); f1.SHA256 != got {
		t.Errorf("Publish().SHA256 = %s, want %s", f1.SHA256, got)
	}
	page := readFile(t, filepath.Join(dir, "simple", "demo-dep", "index.html"))
	wantLink := `<a href="../../files/demo_dep-1.0.0-py3-none-any.whl#sha256=` + f1.SHA256 + `" data-requires-python="&gt;=3.8"`
	if !strings.Contains(page, wantLink) {
		t.Errorf("project page lacks %s:\n%s", wantLink, page)
	}
	meta := readFile(t, filepath.Join(dir, "files", f1.Filename+".metadata"))
	msum := sha256.Sum256([]byte(meta))
	if !strings.Contains(page, `data-core-metadata="sha256=`+hex.EncodeToString(msum[:])+`"`) {
		t.Errorf("project page lacks the PEP 658 metadata hash:\n%s", page)
	}

	// A second version lands next to the first; the first page entry stays.
	if _, err := Publish(dir, Spec{Name: "demo-dep", Version: "1.1.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(dir, Spec{Name: "demo-util", Version: "1.0.0", Requires: []string{"demo-dep>=1"}}); err != nil {
		t.Fatal(err)
	}
	var proj struct {
		Name  string
		Files []struct {
			Filename string
			URL      string
			Hashes   map[string]string
		}
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "simple", "demo-dep", "index.json"))), &proj); err != nil {
		t.Fatal(err)
	}
	if len(proj.Files) != 2 || proj.Files[0].Filename != f1.Filename || proj.Files[0].Hashes["sha256"] != f1.SHA256 ||
		proj.Files[1].Filename != "demo_dep-1.1.0-py3-none-any.whl" {
		t.Errorf("demo-dep JSON page = %+v, want 1.0.0 (hash %s) then 1.1.0", proj, f1.SHA256)
	}
	root := readFile(t, filepath.Join(dir, "simple", "index.html"))
	if !strings.Contains(root, `<a href="demo-dep/">`) || !strings.Contains(root, `<a href="demo-util/">`) {
		t.Errorf("root page lacks a project:\n%s", root)
	}

	// Regenerating gives the same bytes.
	before := readFile(t, filepath.Join(dir, "simple", "demo-dep", "index.html"))
	if _, err := WriteIndex(dir); err != nil {
		t.Fatal(err)
	}
	if after := readFile(t, filepath.Join(dir, "simple", "demo-dep", "index.html")); after != before {
		t.Errorf("WriteIndex twice changed the page:\n%s\nvs\n%s", before, after)
	}
}

func TestWriteIndexRejectsBrokenWheel(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "files", "bad-1.0-py3-none-any.whl")
	if err := os.WriteFile(bad, []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := WriteIndex(dir)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("WriteIndex with a broken wheel = %v, want an error naming %s", err, bad)
	}
}

func TestServeNegotiates(t *testing.T) {
	dir := t.TempDir()
	f, err := Publish(dir, Spec{Name: "demo-dep", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Serve(ctx, dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, accept, wantType, wantBody string
	}{
		{"html by default", "simple/demo-dep/", "", "text/html", "#sha256=" + f.SHA256},
		{"pip's accept header picks json", "simple/demo-dep/", "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01", JSONType, `"sha256": "` + f.SHA256 + `"`},
		{"html preferred", "simple/demo-dep/", "text/html, application/vnd.pypi.simple.v1+json; q=0.5", "text/html", "<a href"},
		{"normalizes the name", "simple/Demo_Dep/", "", "text/html", "#sha256=" + f.SHA256},
		{"root", "simple/", "", "text/html", `<a href="demo-dep/">`},
		{"metadata", "files/" + f.Filename + ".metadata", "", "", "Name: demo-dep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://"+s.Addr()+"/"+tc.path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s = %d, want 200", tc.path, resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.wantType) {
				t.Errorf("GET %s: Content-Type = %q, want %q", tc.path, ct, tc.wantType)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("GET %s: body lacks %q:\n%s", tc.path, tc.wantBody, body)
			}
		})
	}
	resp, err := http.Get("http://" + s.Addr() + "/simple/nope/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET unknown project = %d, want 404", resp.StatusCode)
	}
	cancel()
	if err := s.Wait(); err != nil {
		t.Errorf("Wait() after cancel = %v, want nil", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
