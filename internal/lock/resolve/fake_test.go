package resolve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/compat"
	"imagectl/internal/initconfig"
	"imagectl/internal/spec"
)

// fakeWheel is one wheel the fake index serves and the fake pip resolves.
type fakeWheel struct {
	name, version string
	requested     bool
	requires      []string
}

func (w fakeWheel) file() string {
	return strings.ReplaceAll(w.name, "-", "_") + "-" + w.version + "-py3-none-any.whl"
}

func (w fakeWheel) body() []byte { return []byte("wheel " + w.name + " " + w.version) }

func (w fakeWheel) sha() string {
	s := sha256.Sum256(w.body())
	return hex.EncodeToString(s[:])
}

// fakeRunner answers apt and pip jobs with canned output and records the
// jobs it saw.
type fakeRunner struct {
	mu      sync.Mutex
	jobs    []Job
	apt     string // apt.txt
	aptRC   string
	aptShow string // show.txt of the "apt why" job; empty: apt fails
	wheels  []fakeWheel
	pipRC   string
	pipLog  string
	python  string
	noPy    bool   // the base has no python and apt offers python3.99 only
	aptPy   bool   // the base has no python; apt offers python3.10 and python3.11
	fileURL string // base URL of the wheel files
}

var (
	scriptIndex  = regexp.MustCompile(`INDEX='([^']+)'`)
	scriptPython = regexp.MustCompile(`PYTHON=([0-9.]+)`)
	pageLink     = regexp.MustCompile(`href="([^"]+)"`)
)

func (f *fakeRunner) Run(_ context.Context, j Job) (map[string][]byte, error) {
	f.mu.Lock()
	f.jobs = append(f.jobs, j)
	f.mu.Unlock()
	switch j.Name {
	case "apt resolve":
		rc := f.aptRC
		if rc == "" {
			rc = "0"
		}
		apt := f.apt
		if j.Platform == "linux/arm64" { // the same closure, built for arm64
			apt = strings.ReplaceAll(apt, "_amd64.deb", "_arm64.deb")
		}
		out := map[string][]byte{"apt.txt": []byte(apt), "apt.rc": []byte(rc + "\n"), "apt.log": []byte("E: Unable to locate package nosuch\n")}
		switch {
		case f.noPy:
			out["python.path"], out["python.offers"] = []byte("\n"), []byte("python3.99\n")
		case f.aptPy:
			out["python.path"], out["python.offers"] = []byte("\n"), []byte("python3.10\npython3.11\n")
			out["python.install"] = []byte("python3.11 python3.11-venv\n")
		default:
			out["python.path"] = []byte("/usr/bin/python3.11\n")
		}
		return out, nil
	case "apt why":
		if f.aptShow == "" {
			return map[string][]byte{"show.rc": []byte("100\n"), "show.log": []byte("E: no records\n")}, nil
		}
		return map[string][]byte{"show.rc": []byte("0\n"), "show.txt": []byte(f.aptShow)}, nil
	case "pip resolve":
		if f.pipRC != "" && f.pipRC != "0" {
			return map[string][]byte{"pip.rc": []byte(f.pipRC + "\n"), "pip.log": []byte(f.pipLog)}, nil
		}
		m, pm := scriptIndex.FindStringSubmatch(j.Script), scriptPython.FindStringSubmatch(j.Script)
		if m == nil || pm == nil || j.Resolver == nil {
			return nil, fmt.Errorf("fake runner: the pip job has no INDEX, PYTHON or resolver")
		}
		rep, err := f.report(m[1])
		if err != nil {
			return nil, err
		}
		return map[string][]byte{"pip.rc": []byte("0\n"), "report.json": rep, "python.path": []byte("/usr/bin/python" + pm[1] + "\n")}, nil
	}
	return nil, fmt.Errorf("fake runner: unexpected job %q", j.Name)
}

// report is what pip would report resolving f.wheels through index (the
// lock's proxy): each wheel's URL as the index's page links it.
func (f *fakeRunner) report(index string) ([]byte, error) {
	type item map[string]any
	var install []item
	for _, w := range f.wheels {
		page := index + w.name + "/"
		resp, err := http.Get(page)
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		link := ""
		for _, m := range pageLink.FindAllStringSubmatch(string(b), -1) {
			if l, _ := url.PathUnescape(m[1]); strings.Contains(l, w.file()) {
				link = html.UnescapeString(m[1])
			}
		}
		if resp.StatusCode != 200 || link == "" {
			return nil, fmt.Errorf("fake pip: %s: HTTP %d, no link to %s", page, resp.StatusCode, w.file())
		}
		base, _ := url.Parse(page)
		ref, _ := url.Parse(link)
		u := base.ResolveReference(ref)
		u.Fragment = ""
		install = append(install, item{
			"download_info": item{
				"url":          u.String(),
				"archive_info": item{"hash": "sha256=" + w.sha(), "hashes": item{"sha256": w.sha()}},
			},
			"is_direct": false,
			"requested": w.requested,
			"metadata":  item{"metadata_version": "2.1", "name": w.name, "version": w.version, "requires_dist": w.requires},
		})
	}
	py := f.python
	if py == "" {
		py = "3.11.2"
	}
	b, _ := json.Marshal(item{"version": "1", "pip_version": "23.0.1", "install": install,
		"environment": item{"python_version": strings.Join(strings.Split(py, ".")[:2], "."), "python_full_version": py, "platform_machine": "x86_64", "implementation_name": "cpython"}})
	return b, nil
}

func (f *fakeRunner) job(name string) (Job, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range f.jobs {
		if j.Name == name {
			return j, true
		}
	}
	return Job{}, false
}

// fakePip is the resolver wheel every fake index lists.
var fakePip = fakeWheel{name: "pip", version: "23.0.1"}

// fixture is an in-process registry with a random base image, a file
// server for the wheels and a fake runner.
type fixture struct {
	base   string
	runner *fakeRunner
	files  *httptest.Server
	cache  string
}

const aptJQ = `'http://deb.example/debian/pool/main/j/jq/jq_1.6-2.1_amd64.deb' jq_1.6-2.1_amd64.deb 64208 SHA256:` + "5f8b5d4e3c2a1b0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f" + `
'http://deb.example/debian/pool/main/libj/libjq1/libjq1_1.6-2.1_amd64.deb' libjq1_1.6-2.1_amd64.deb 135260 SHA256:` + "1111111111111111111111111111111111111111111111111111111111111111" + `
'http://deb.example/debian/pool/main/o/oniguruma/libonig5_6.9.8-1_amd64.deb' libonig5_6.9.8-1_amd64.deb 188512 SHA256:` + "2222222222222222222222222222222222222222222222222222222222222222" + `
`

func newFixture(t *testing.T) *fixture {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	base := strings.TrimPrefix(reg.URL, "http://") + "/imagectl/debian-base:bookworm"
	f := &fixture{base: base, runner: &fakeRunner{apt: aptJQ}, cache: t.TempDir()}
	f.pushBase(t)
	f.files = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/files/") && strings.HasSuffix(r.URL.Path, "/") {
			// A plain PEP 503 page per project, under any index path
			// (/simple/, /whl/cu124/): the wheels of that name.
			name := path.Base(r.URL.Path)
			var links []string
			for _, fw := range append(f.runner.wheels, fakePip) {
				if fw.name == name {
					links = append(links, fmt.Sprintf(`<a href="/files/%s#sha256=%s">%s</a>`, fw.file(), fw.sha(), fw.file()))
				}
			}
			if links == nil {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, "<html><body>\n%s\n</body></html>\n", strings.Join(links, "<br>\n"))
			return
		}
		for _, fw := range append(f.runner.wheels, fakePip) {
			if r.URL.Path == "/files/"+fw.file() {
				w.Header().Set("Content-Length", fmt.Sprint(len(fw.body())))
				if r.Method != http.MethodHead {
					w.Write(fw.body())
				}
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(f.files.Close)
	f.runner.fileURL = f.files.URL
	f.runner.wheels = []fakeWheel{
		{name: "demo-core", version: "1.0.0", requested: true},
		{name: "demo-util", version: "1.0.0", requested: true, requires: []string{"demo-core>=1.0"}},
	}
	return f
}

// pushBase pushes a new random image to the base tag.
func (f *fixture) pushBase(t *testing.T) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(f.base)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

// demo is the demo image as the spec package decodes it.
func (f *fixture) demo() spec.Image {
	swap := 1
	return spec.Image{
		Name: "demo", File: "specs/demo.hcl", Line: 19, Column: 1,
		Base: f.base, Python: "3.11",
		Apt: []string{"jq"}, Pip: []string{"demo-core==1.0.0", "demo-util"},
		PipIndexes: []string{f.files.URL + "/simple/"},
		Frozen:     []string{"demo-core"},
		Labels:     map[string]string{"org.opencontainers.image.title": "imagectl demo"},
		Repos:      spec.Repos{Staging: "127.0.0.1:5000/imagectl/staging/demo", Release: "127.0.0.1:5000/imagectl/demo"},
		Runtime:    initconfig.Config{Storage: initconfig.Storage{Path: "/storage", ReadyFile: "/storage/.ready"}, Swappiness: &swap},
		Verify:     spec.Verify{CPUOnly: true},
	}
}

func (f *fixture) opts(extra ...Option) []Option {
	return append([]Option{WithRunner(f.runner), WithSourceDateEpoch(1700000000), WithCatalog(fakeCatalog{}), WithIndexCache(f.cache)}, extra...)
}

// fakeCatalog passes every request and answers a fixed torch wheel.
type fakeCatalog struct {
	digest   string
	problems []compat.Problem
}

func (c fakeCatalog) Digest() string {
	if c.digest == "" {
		return "sha256:" + strings.Repeat("c", 64)
	}
	return c.digest
}

func (c fakeCatalog) Check(r compat.Request) (compat.Resolved, []compat.Problem) {
	var res compat.Resolved
	if r.Torch != "" {
		res.Wheel = compat.Wheel{Torch: r.Torch, Variant: "cu124", CUDA: "12.4", IndexPath: "whl/cu124",
			TorchIndexProjects: []string{"torch", "torchvision", "torchaudio", "triton", "pytorch-triton", "nvidia-*"},
			NCCL:               &compat.Pin{Package: "nvidia-nccl-cu12", Version: "2.21.5"},
			CUDNN:              &compat.Pin{Package: "nvidia-cudnn-cu12", Version: "9.1.0.70"},
			Archs:              []string{"sm_90", "sm_80"}}
		res.Floor = compat.DriverFloor{CUDA: "12.4", Native: "550.54.14", MinorCompat: "525.60.13"}
	}
	return res, c.problems
}
