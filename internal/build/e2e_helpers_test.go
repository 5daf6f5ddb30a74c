package build

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/pep"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// e2e is what the end-to-end tests share: a buildkitd client, a wheel
// index of our own on loopback (buildkitd runs with host networking) and
// the deb closure of jq resolved inside the base.
type e2e struct {
	env   testenv.Env
	c     *client.Client
	index string // wheel index dir
	files string // http://127.0.0.1:PORT/files/
	base  lock.Base
	debs  []lock.Deb
	init  string
}

var (
	e2eOnce sync.Once
	e2eVal  *e2e
	e2eErr  error
)

func getE2E(t testing.TB) *e2e {
	t.Helper()
	env := testenv.Get(t)
	e2eOnce.Do(func() { e2eVal, e2eErr = setupE2E(env) })
	if e2eErr != nil {
		t.Fatalf("end-to-end setup: %v", e2eErr)
	}
	return e2eVal
}

func setupE2E(env testenv.Env) (*e2e, error) {
	ctx := context.Background()
	c, err := Dial(ctx, env.BuildkitHost, 10*time.Second)
	if err != nil {
		return nil, err
	}
	e := &e2e{env: env, c: c, init: filepath.Join(env.Bin, "imagectl-init")}
	if _, err := os.Stat(e.init); err != nil {
		return nil, fmt.Errorf("the init binary: %w (run make build)", err)
	}
	e.index, err = os.MkdirTemp("", "imagectl-build-e2e-index-")
	if err != nil {
		return nil, err
	}
	srv, err := wheelhouse.Serve(ctx, e.index, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e.files = "http://" + srv.Addr() + "/files/"
	if e.base, err = resolveBase(ctx, env.Base); err != nil {
		return nil, err
	}
	if e.debs, err = resolveDebs(ctx, c, e.base.Pull(), "jq"); err != nil {
		return nil, err
	}
	return e, nil
}

// resolveBase pins the base the way the lock stage does: by its manifest.
func resolveBase(ctx context.Context, ref string) (lock.Base, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return lock.Base{}, err
	}
	desc, err := remote.Get(r, remote.WithContext(ctx))
	if err != nil {
		return lock.Base{}, fmt.Errorf("resolving the base %s: %w", ref, err)
	}
	b := lock.Base{Ref: ref, IndexDigest: desc.Digest.String(), ManifestDigest: desc.Digest.String(), Platform: "linux/amd64"}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return lock.Base{}, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return lock.Base{}, err
		}
		for _, m := range im.Manifests {
			if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == "amd64" {
				b.ManifestDigest = m.Digest.String()
			}
		}
	}
	return b, nil
}

// resolveDebs asks apt inside the base for the closure of pkgs (apt-get
// --print-uris: URL and size of every .deb it would download) and takes
// each file's SHA256 from apt's package records (apt-cache show).
func resolveDebs(ctx context.Context, c *client.Client, base string, pkgs ...string) ([]lock.Deb, error) {
	script := `set -e
apt-get update -qq >/dev/null
apt-get install --print-uris -qq --no-install-recommends ` + strings.Join(pkgs, " ") + ` > /out/uris
for f in $(awk '{print $2}' /out/uris); do
  n=${f%%_*}; v=$(echo "$f" | cut -d_ -f2 | sed 's/%3a/:/g')
  apt-cache show "$n=$v" | grep -E '^(Package|Version|SHA256):'
done > /out/show`
	st := llb.Image(base, llb.Platform(platform)).Run(
		llb.Args([]string{"/bin/sh", "-c", script}),
		llb.AddEnv("PATH", systemPath),
		llb.IgnoreCache,
	).AddMount("/out", llb.Scratch())
	def, err := st.Marshal(ctx, llb.Platform(platform))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "imagectl-build-e2e-debs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if _, err := c.Solve(ctx, def, client.SolveOpt{Exports: []client.ExportEntry{{Type: client.ExporterLocal, OutputDir: dir}}}, nil); err != nil {
		return nil, fmt.Errorf("resolving debs in the base: %w", err)
	}
	show, err := os.ReadFile(filepath.Join(dir, "show"))
	if err != nil {
		return nil, err
	}
	// name_version -> sha256 (by name and version, not the pool's file
	// name: that one has no epoch, apt's local one has it escaped).
	sha := map[string]string{}
	var pkg, ver string
	for _, line := range strings.Split(string(show), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "Package":
			pkg = v
		case "Version":
			ver = v
		case "SHA256":
			sha[pkg+"_"+ver] = v
		}
	}
	uris, err := os.ReadFile(filepath.Join(dir, "uris"))
	if err != nil {
		return nil, err
	}
	var debs []lock.Deb
	sc := bufio.NewScanner(strings.NewReader(string(uris)))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			return nil, fmt.Errorf("unexpected apt --print-uris line %q", sc.Text())
		}
		size, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return nil, err
		}
		fn, err := url.PathUnescape(strings.TrimSuffix(fields[1], ".deb"))
		if err != nil {
			return nil, err
		}
		parts := strings.Split(fn, "_")
		if len(parts) != 3 {
			return nil, fmt.Errorf("unexpected deb file name %q", fields[1])
		}
		h := sha[parts[0]+"_"+parts[1]]
		if h == "" {
			return nil, fmt.Errorf("apt-cache show gave no SHA256 for %s", fields[1])
		}
		debs = append(debs, lock.Deb{Name: parts[0], Version: parts[1], Arch: parts[2],
			URL: strings.Trim(fields[0], "'"), SHA256: h, Size: size})
	}
	if len(debs) == 0 {
		return nil, fmt.Errorf("apt resolved no packages for %v", pkgs)
	}
	return debs, sc.Err()
}

// resolver publishes Debian's pip wheel (python3-pip-whl, from hack/deps.sh)
// to the test index and returns its lock entry: the pip the build installs with.
func (e *e2e) resolver(t testing.TB) lock.Wheel {
	t.Helper()
	m, _ := filepath.Glob("/usr/share/python-wheels/pip-*-py3-none-any.whl")
	if len(m) == 0 {
		t.Fatal("no /usr/share/python-wheels/pip-*.whl: run make deps (python3-pip-whl)")
	}
	b, err := os.ReadFile(m[len(m)-1])
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(m[len(m)-1])
	if err := os.MkdirAll(filepath.Join(e.index, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.index, "files", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := wheelhouse.WriteIndex(e.index)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Filename == name {
			return lock.Wheel{Name: "pip", Version: f.Version, Filename: f.Filename, URL: e.files + f.Filename, SHA256: f.SHA256, Size: f.Size}
		}
	}
	t.Fatalf("%s is not in the index", name)
	return lock.Wheel{}
}

// wheel publishes s to the test index and returns its lock entry.
func (e *e2e) wheel(t testing.TB, s wheelhouse.Spec) lock.Wheel {
	t.Helper()
	f, err := wheelhouse.Publish(e.index, s)
	if err != nil {
		t.Fatal(err)
	}
	return lock.Wheel{Name: pep.Normalize(f.Project), Version: f.Version, Filename: f.Filename,
		URL: e.files + f.Filename, SHA256: f.SHA256, Size: f.Size}
}

// smallCore is the demo's frozen big wheel in the tests; the benchmark uses
// a few hundred MB under another version.
var smallCore = wheelhouse.Spec{Name: "demo-core", Version: "1.0.0", PayloadBytes: 1 << 20}

// lock returns a demo-like lock: jq from the base's apt, core (frozen),
// demo-dep and demo-util at utilVersion; pushed to a staging repository of
// its own.
func (e *e2e) lock(t testing.TB, repo, utilVersion string, core wheelhouse.Spec) *lock.Lock {
	t.Helper()
	l := &lock.Lock{
		SchemaVersion:   lock.SchemaVersion,
		Name:            "demo",
		Spec:            lock.Source{Path: "specs/demo.hcl"},
		SourceDateEpoch: 1700000000,
		Core:            lock.Core{Python: "3.11"},
		Frozen:          []string{"demo-core"},
		Base:            e.base,
		Python:          lock.Python{Version: "3.11.2", Path: "/usr/bin/python3.11", Provider: "base"},
		Resolver:        e.resolver(t),
		Apt:             e.debs,
		Pip: []lock.Wheel{
			e.wheel(t, core),
			e.wheel(t, wheelhouse.Spec{Name: "demo-dep", Version: "1.0.0"}),
			e.wheel(t, wheelhouse.Spec{Name: "demo-util", Version: utilVersion, Requires: []string{"demo-dep>=1"}}),
		},
		Labels:  map[string]string{"org.opencontainers.image.title": "imagectl demo"},
		Runtime: initconfig.Config{Storage: initconfig.Storage{Path: "/storage", ReadyFile: "/storage/.ready", Timeout: initconfig.Duration(time.Second)}},
	}
	l.Repos.Staging = e.env.Registry + "/imagectl/staging/" + repo
	l.Repos.Release = e.env.Registry + "/imagectl/" + repo
	if _, err := lock.Marshal(l); err != nil {
		t.Fatal(err)
	}
	return l
}

// runIn runs script in the image of the OCI layout dir with podman, through
// the image's entrypoint (the init), network off, and returns the files the
// script wrote under /out; a failing script fails the test with its output.
//
// It runs a container rather than a BuildKit RUN step on the pushed image
// because the check goes through the image's entrypoint (the init as PID
// 1), which a RUN step does not. (A RUN step on the image, on the buildkitd
// that built it, is TestE2EDownstreamFromOnTheSameBuilder.)
func (e *e2e) runIn(t testing.TB, dir, script string) map[string]string {
	t.Helper()
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("podman is needed to run the built image (make deps installs it): %v", err)
	}
	out := t.TempDir()
	cmd := exec.Command(podman, "run", "--rm", "--network", "none",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"-v", out+":/out", "oci:"+dir, "/bin/sh", "-c", script)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("podman run oci:%s: %v\n%s\n%s", dir, err, script, b)
	}
	files := map[string]string{}
	ents, _ := os.ReadDir(out)
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join(out, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[en.Name()] = string(b)
	}
	files["output"] = string(b)
	return files
}

// uniq makes repository names unique per run.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// twoPlatformDemo is the demo spec's image for linux/amd64 and linux/arm64
// on the two-platform base, against the shared wheel index, staged in a
// repository of its own (suffix named after the test).
func (e *e2e) twoPlatformDemo(t testing.TB, ctx context.Context, suffix string) spec.Image {
	t.Helper()
	base := e.env.MultiBase(t)
	imgs, err := spec.Load(ctx, []string{filepath.Join(e.env.Root, "specs", "demo.hcl")},
		spec.WithVars(map[string]string{"registry": e.env.Registry, "wheel_index": e.env.WheelIndex}))
	if err != nil || len(imgs) != 1 {
		t.Fatalf("loading the demo spec: %d images, %v", len(imgs), err)
	}
	img := imgs[0]
	img.Base, img.Platforms = base, []string{"linux/amd64", "linux/arm64"}
	img.Repos.Staging += "-" + uniq(suffix)
	return img
}
