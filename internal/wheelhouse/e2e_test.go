package wheelhouse_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// TestBasePipAcceptsIndex runs Debian bookworm's own pip (23.0.1), inside the
// local base image through buildkitd, against the index in both its JSON and
// its HTML form: the resolver the lock stage really uses.
func TestBasePipAcceptsIndex(t *testing.T) {
	e := testenv.Get(t)
	dir := t.TempDir()
	var dep wheelhouse.File
	for _, s := range []wheelhouse.Spec{
		{Name: "demo-dep", Version: "0.9.0"},
		{Name: "demo-dep", Version: "1.0.0"},
		{Name: "demo-util", Version: "1.0.0", Requires: []string{"demo-dep>=1"}},
	} {
		f, err := wheelhouse.Publish(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name == "demo-dep" && s.Version == "1.0.0" {
			dep = f
		}
	}
	h := wheelhouse.Handler(dir)
	jsonSrv := httptest.NewServer(h)
	defer jsonSrv.Close()
	htmlSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Accept", "text/html")
		h.ServeHTTP(w, r)
	}))
	defer htmlSrv.Close()

	ctx := t.Context()
	bctx := t.TempDir()
	df := fmt.Sprintf(`FROM %s AS pip
RUN python3 -m venv /v
RUN /v/bin/pip install --disable-pip-version-check --dry-run --report /json.json --index-url %s/simple/ demo-util
RUN /v/bin/pip install --disable-pip-version-check --dry-run --report /html.json --index-url %s/simple/ demo-util
RUN /v/bin/pip install --disable-pip-version-check --index-url %s/simple/ demo-util && /v/bin/python -c 'import demo_util, demo_dep; print(demo_dep.__version__)' > /imported
FROM scratch
COPY --from=pip /json.json /html.json /imported /
`, e.Base, jsonSrv.URL, htmlSrv.URL, jsonSrv.URL)
	if err := os.WriteFile(filepath.Join(bctx, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := e.Command(t, ctx, "buildctl", "--addr", e.BuildkitHost, "build", "--frontend", "dockerfile.v0",
		"--local", "context="+bctx, "--local", "dockerfile="+bctx, "--output", "type=local,dest="+out, "--progress", "plain")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("buildctl build: %v\n%s", err, b)
	}
	for _, name := range []string{"json.json", "html.json"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			PipVersion string `json:"pip_version"`
			Install    []struct {
				Metadata     struct{ Name, Version string }
				DownloadInfo struct {
					ArchiveInfo struct {
						Hashes map[string]string `json:"hashes"`
					} `json:"archive_info"`
				} `json:"download_info"`
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := map[string]string{}
		for _, i := range r.Install {
			got[i.Metadata.Name+"=="+i.Metadata.Version] = i.DownloadInfo.ArchiveInfo.Hashes["sha256"]
		}
		if len(got) != 2 || got["demo-dep==1.0.0"] != dep.SHA256 || got["demo-util==1.0.0"] == "" {
			t.Errorf("%s (pip %s): installs %v, want demo-util==1.0.0 and demo-dep==1.0.0 sha256 %s", name, r.PipVersion, got, dep.SHA256)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "imported")); string(b) != "1.0.0\n" {
		t.Errorf("import demo_dep in the base printed %q, want 1.0.0", b)
	}
}
