package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
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
	fileURL string // base URL of the wheel files
}

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
		return map[string][]byte{"apt.txt": []byte(f.apt), "apt.rc": []byte(rc + "\n"), "apt.log": []byte("E: Unable to locate package nosuch\n")}, nil
	case "apt why":
		if f.aptShow == "" {
			return map[string][]byte{"show.rc": []byte("100\n"), "show.log": []byte("E: no records\n")}, nil
		}
		return map[string][]byte{"show.rc": []byte("0\n"), "show.txt": []byte(f.aptShow)}, nil
	case "pip resolve":
		if f.pipRC != "" && f.pipRC != "0" {
			return map[string][]byte{"pip.rc": []byte(f.pipRC + "\n"), "pip.log": []byte(f.pipLog)}, nil
		}
		return map[string][]byte{"pip.rc": []byte("0\n"), "report.json": f.report()}, nil
	}
	return nil, fmt.Errorf("fake runner: unexpected job %q", j.Name)
}

func (f *fakeRunner) report() []byte {
	type item map[string]any
	var install []item
	for _, w := range f.wheels {
		install = append(install, item{
			"download_info": item{
				"url":          f.fileURL + "/files/" + w.file(),
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
		"environment": item{"python_version": py, "platform_machine": "x86_64", "implementation_name": "cpython"}})
	return b
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

// fixture is an in-process registry with a random base image, a file
// server for the wheels and a fake runner.
type fixture struct {
	base   string
	runner *fakeRunner
	files  *httptest.Server
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
	f := &fixture{base: base, runner: &fakeRunner{apt: aptJQ}}
	f.pushBase(t)
	f.files = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, fw := range f.runner.wheels {
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
	return append([]Option{WithRunner(f.runner), WithSourceDateEpoch(1700000000), WithCatalog(fakeCatalog{})}, extra...)
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
			NCCL:  &compat.Pin{Package: "nvidia-nccl-cu12", Version: "2.21.5"},
			CUDNN: &compat.Pin{Package: "nvidia-cudnn-cu12", Version: "9.1.0.70"},
			Archs: []string{"sm_90", "sm_80"}}
		res.Floor = compat.DriverFloor{CUDA: "12.4", Native: "550.54.14", MinorCompat: "525.60.13"}
	}
	return res, c.problems
}
