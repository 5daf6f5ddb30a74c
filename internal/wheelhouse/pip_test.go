package wheelhouse

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// newVenv makes a virtual environment with the machine's python3, or skips
// the test saying why.
func newVenv(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: cannot check the index with real pip")
	}
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(py, "-m", "venv", venv).CombinedOutput(); err != nil {
		t.Skipf("python3 -m venv is unavailable (install python3-venv): %v\n%s", err, out)
	}
	return venv
}

func pip(t *testing.T, venv string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), append([]string{"-m", "pip"}, args...)...)
	cmd.Env = append(os.Environ(),
		"PIP_CONFIG_FILE=/dev/null", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1",
		"PIP_CACHE_DIR="+filepath.Join(t.TempDir(), "cache"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestPipAcceptsIndex installs from the index with the real pip, through the
// JSON (PEP 691) pages and through the HTML (PEP 503) pages.
func TestPipAcceptsIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the pip round trip")
	}
	venv := newVenv(t)
	dir := t.TempDir()
	dep, err := Publish(dir, Spec{Name: "demo-dep", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Spec{
		{Name: "demo-dep", Version: "0.9.0"},
		{Name: "demo-util", Version: "1.0.0", Requires: []string{"demo-dep>=1"}},
		{Name: "demo-core", Version: "1.0.0", PayloadBytes: 4 << 20},
		{Name: "demo-future", Version: "1.0.0", RequiresPython: ">=4"},
	} {
		if _, err := Publish(dir, s); err != nil {
			t.Fatal(err)
		}
	}

	for _, mode := range []string{"json", "html"} {
		t.Run(mode, func(t *testing.T) {
			var wheelGets atomic.Int64
			h := Handler(dir)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if mode == "html" {
					r.Header.Set("Accept", "text/html")
				}
				if strings.HasSuffix(r.URL.Path, ".whl") {
					wheelGets.Add(1)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				if strings.HasPrefix(r.URL.Path, "/simple/") && rec.Code == 200 {
					ct := rec.Header().Get("Content-Type")
					if (mode == "json") != (ct == JSONType) {
						t.Errorf("%s mode: %s served as %q", mode, r.URL.Path, ct)
					}
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
			}))
			defer srv.Close()
			index := srv.URL + "/simple/"

			// Resolution report: demo-util pulls demo-dep 1.0.0 (not 0.9.0),
			// with the hash from the index.
			report := filepath.Join(t.TempDir(), "report.json")
			pip(t, venv, "install", "--dry-run", "--ignore-installed", "--report", report, "--index-url", index, "demo-util", "demo-core")
			var r struct {
				Install []struct {
					Metadata     struct{ Name, Version string }
					DownloadInfo struct {
						URL         string `json:"url"`
						ArchiveInfo struct {
							Hashes map[string]string `json:"hashes"`
						} `json:"archive_info"`
					} `json:"download_info"`
				}
			}
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("pip report: %v\n%s", err, b)
			}
			got := map[string]string{}
			for _, i := range r.Install {
				got[i.Metadata.Name+"=="+i.Metadata.Version] = i.DownloadInfo.ArchiveInfo.Hashes["sha256"]
				if i.Metadata.Name == "demo-dep" && i.DownloadInfo.URL != srv.URL+"/files/"+dep.Filename {
					t.Errorf("report URL for demo-dep = %q, want %q", i.DownloadInfo.URL, srv.URL+"/files/"+dep.Filename)
				}
			}
			if len(got) != 3 || got["demo-dep==1.0.0"] != dep.SHA256 || got["demo-util==1.0.0"] == "" || got["demo-core==1.0.0"] == "" {
				t.Errorf("pip report installs %v, want demo-util, demo-core and demo-dep==1.0.0 with sha256 %s", got, dep.SHA256)
			}
			t.Logf("%s: wheel downloads during --dry-run: %d", mode, wheelGets.Load())

			// Requires-Python is honoured: demo-future needs Python >= 4.
			cmd := exec.Command(filepath.Join(venv, "bin", "python"), "-m", "pip", "install", "--dry-run", "--index-url", index, "demo-future")
			cmd.Env = append(os.Environ(), "PIP_CONFIG_FILE=/dev/null", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_CACHE_DIR=1")
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Errorf("pip install demo-future (Requires-Python >=4) succeeded, want a refusal:\n%s", out)
			}

			// A real install, then import it.
			pip(t, venv, "install", "--force-reinstall", "--index-url", index, "demo-util", "demo-core")
			out, err := exec.Command(filepath.Join(venv, "bin", "python"), "-c",
				"import demo_util, demo_dep, demo_core, os; print(demo_util.__version__, demo_dep.__version__, os.path.getsize(demo_core.PAYLOAD))").CombinedOutput()
			if err != nil {
				t.Fatalf("importing the installed wheels: %v\n%s", err, out)
			}
			if got, want := strings.TrimSpace(string(out)), "1.0.0 1.0.0 4194304"; got != want {
				t.Errorf("installed versions and payload size = %q, want %q", got, want)
			}
		})
	}
}
