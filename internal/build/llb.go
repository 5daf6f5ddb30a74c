package build

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/buildkit/client/llb"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

	"imagectl/internal/auth"
	"imagectl/internal/build/layerplan"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/pep"
	"imagectl/internal/shell"
)

// Paths inside the image.
const (
	// debDir and wheelDir are where fetched artifacts are mounted
	// (read-only, never part of a layer): over /mnt, which every base has, so
	// that no mount stub is created (and removed) in a directory of the
	// layer, which would change that directory's mtime after the step.
	debDir   = "/mnt"
	wheelDir = "/mnt"
	// filesDir is where the init layer's files are mounted.
	filesDir = "/mnt"
)

// systemPath is PATH in the image and in every build step.
const systemPath = initconfig.VenvPath + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// State returns the image's root filesystem as LLB: the base pinned by
// digest with one install step per planned layer run on top of the one
// before, so that each step's own changes are one layer of the image. It
// reads the init binary (see WithInit) and nothing else; no daemon is
// contacted.
func State(ctx context.Context, l *lock.Lock, opts ...Option) (llb.State, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return llb.State{}, err
	}
	if len(l.Platforms) > 0 {
		return llb.State{}, fmt.Errorf("lock of %s has platforms %s: State builds one platform; take its view with lock.ForPlatform (Solve builds them all into an index)", l.Name, strings.Join(l.PlatformNames(), ", "))
	}
	plat, err := platformOf(l)
	if err != nil {
		return llb.State{}, err
	}
	path := o.initPathFor(plat)
	if err := checkInitArch(path, plat); err != nil {
		return llb.State{}, err
	}
	initBin, err := os.ReadFile(path)
	if err != nil {
		return llb.State{}, fmt.Errorf("reading the init binary: %w (build it with `make build`, or pass --init)", err)
	}
	return state(l, o.fileEpoch(l), plat, initBin, o.access)
}

// Definition marshals State for the lock's platform: the LLB that Solve sends to
// buildkitd, and what `buildctl build` accepts on stdin.
func Definition(ctx context.Context, l *lock.Lock, opts ...Option) (*llb.Definition, error) {
	st, err := State(ctx, l, opts...)
	if err != nil {
		return nil, err
	}
	plat, err := platformOf(l)
	if err != nil {
		return nil, err
	}
	def, err := st.Marshal(ctx, llb.Platform(plat))
	if err != nil {
		return nil, fmt.Errorf("marshalling the build of %q: %w", l.Name, err)
	}
	return def, nil
}

// fileEpoch is the SOURCE_DATE_EPOCH the install steps stamp every file
// with, and the exporter's: the lock's, except that an eStargz layer cannot
// hold a file of 1970-01-01T00:00:00Z. eStargz's table of contents leaves a
// zero Unix time out (estargz.formatModtime), and stargz-snapshotter then
// serves the lazily mounted file as of 0001-01-01 (mtime -62135596800); a
// lock from a base created at the epoch (reproducible bases are) made
// torch's ptxas segfault on the H200, stat-ing Triton's sources for
// -lineinfo (docs/build.md, "Lazy pulling"). So eStargz builds of such a
// lock stamp their files one second later; other compressions keep 0.
func (o *options) fileEpoch(l *lock.Lock) int64 {
	if o.compression == "estargz" && l.SourceDateEpoch == 0 {
		return 1
	}
	return l.SourceDateEpoch
}

func state(l *lock.Lock, fileEpoch int64, platform ocispecs.Platform, initBin []byte, a *auth.Access) (llb.State, error) {
	plan := layerplan.Of(l)
	epoch := strconv.FormatInt(fileEpoch, 10)
	// The layers are a plain chain of steps, not llb.Diff of each step
	// merged onto the base (llb.Merge): that exports the same blobs, but
	// BuildKit indexes each diff record under the chain of the layer it
	// reuses while its snapshot holds only that layer, and a later pull of
	// the image on the same buildkitd can take such a record for the whole
	// root (docs/build.md, "Downstream builds on the builder").
	cur := llb.Image(plan.Base, llb.Platform(platform), llb.WithCustomName("base "+plan.Base))
	for _, layer := range plan.Layers {
		var next llb.State
		switch layer.Kind {
		case layerplan.KindBase:
			continue
		case layerplan.KindSystem:
			debs, err := fetchDebs(layer.Debs, a)
			if err != nil {
				return llb.State{}, err
			}
			next = install(cur, epoch, debs, debDir, systemScript(),
				fmt.Sprintf("[system] dpkg --install %d packages", len(layer.Debs)))
		case layerplan.KindVenv:
			script, err := venvScript(l)
			if err != nil {
				return llb.State{}, err
			}
			pip, err := fetchWheels([]lock.Wheel{l.Resolver}, a)
			if err != nil {
				return llb.State{}, fmt.Errorf("resolver: %w", err)
			}
			next = install(cur, epoch, pip, wheelDir, script,
				fmt.Sprintf("[venv] %s -m venv %s, pip %s from the locked wheel", l.Python.Path, initconfig.VenvPath, l.Resolver.Version))
		case layerplan.KindBig, layerplan.KindPeriphery:
			wheels, err := fetchWheels(layer.Wheels, a)
			if err != nil {
				return llb.State{}, err
			}
			next = install(cur, epoch, wheels, wheelDir, pipScript(layer.Wheels),
				fmt.Sprintf("[%s] pip install --no-index --no-deps %s", layer.Name, wheelList(layer.Wheels)))
		case layerplan.KindInit:
			next = install(cur, epoch, initFiles(l, initBin), filesDir, initScript, "[init] "+initconfig.InitPath)
		case layerplan.KindRuntime:
			files, err := runtimeFiles(l)
			if err != nil {
				return llb.State{}, err
			}
			next = install(cur, epoch, files, filesDir, runtimeStepScript(l), "[runtime] "+initconfig.Path)
		default:
			return llb.State{}, fmt.Errorf("layer %q: unknown kind %q", layer.Name, layer.Kind)
		}
		cur = next
	}
	return cur, nil
}

// install runs script on top of cur with the network off, the fetched
// artifacts mounted read-only at dir and a tmpfs on /tmp.
func install(cur llb.State, epoch string, artifacts llb.State, dir, script, name string) llb.State {
	ro := []llb.RunOption{
		llb.Args([]string{"/bin/sh", "-c", clampMtimes(script)}),
		llb.Network(llb.NetModeNone),
		llb.AddEnv("PATH", systemPath),
		llb.AddEnv("SOURCE_DATE_EPOCH", epoch),
		llb.AddEnv("DEBIAN_FRONTEND", "noninteractive"),
		llb.AddEnv("LANG", "C.UTF-8"),
		llb.AddEnv("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
		llb.AddEnv("PIP_NO_CACHE_DIR", "1"),
		llb.AddMount("/tmp", llb.Scratch(), llb.Tmpfs()),
		llb.WithCustomName(name),
	}
	if dir != "" {
		ro = append(ro, llb.AddMount(dir, artifacts, llb.Readonly))
	}
	return cur.Run(ro...).Root()
}

// clampMtimes wraps an install script so that every file, directory and
// link the step creates or changes gets SOURCE_DATE_EPOCH as its mtime: the
// layer is then byte-identical between builds even when the exporter does
// not rewrite timestamps. The marker lives on the /tmp tmpfs, outside the
// layer; -xdev keeps find off /proc, /sys, /dev and the artifact mounts.
//
// The step waits 50 ms after the marker: the kernel stamps files with a
// coarse clock (one tick, up to 10 ms), so a directory a quick step creates
// right after the marker could carry the marker's very mtime, which -newer
// does not match; left unclamped, it made two clean builds of the few-KB
// runtime layer differ. (Dating the marker back instead would also match
// the files BuildKit creates for the step's own mounts, /etc/hosts among
// them, which cannot be touched.)
func clampMtimes(script string) string {
	return `set -eu
touch /tmp/.imagectl-step-start
sleep 0.05
(
` + script + `
)
find / -xdev -newer /tmp/.imagectl-step-start -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +`
}

// dpkgScript installs every fetched .deb at once with apt-get, from the
// files alone (no package lists, network off): apt orders the unpacking by
// Pre-Depends, which `dpkg --install` of a set does not (python3-minimal
// pre-depends on python3.11-minimal and sorts before it), and any dependency
// outside the locked set fails the step. It then drops the logs and caches
// that would make the layer differ between two builds.
const dpkgScript = `set -eu
apt-get install -y -qq --no-install-recommends ` + debDir + `/*.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log >&2; exit 1; }
rm -f /var/log/dpkg.log /var/log/alternatives.log /var/cache/ldconfig/aux-cache \
  /var/log/apt/history.log /var/log/apt/term.log /var/log/apt/eipp.log.xz \
  /var/cache/apt/pkgcache.bin /var/cache/apt/srcpkgcache.bin \
  /var/lib/dpkg/status-old /var/lib/dpkg/diversions-old /var/lib/dpkg/statoverride-old \
  /var/cache/debconf/config.dat-old /var/cache/debconf/templates.dat-old`

// venvScript makes the venv with the lock's interpreter (never a python3
// found on PATH) and no pip of the base's, then installs the lock's own pip
// wheel into it, run from the wheel itself: every later step installs with
// that pip, and users of the image get it. PEP 668 forbids installing into
// the system Python, hence the venv.
func venvScript(l *lock.Lock) (string, error) {
	py := l.Python.Path
	if py == "" || !strings.HasPrefix(py, "/") || strings.ContainsAny(py, " '\"$`\\\n") {
		return "", fmt.Errorf("lock %s: python.path %q is not an absolute interpreter path (a lock written before imagectl recorded the interpreter: run imagectl lock again)", l.Name, py)
	}
	w := l.Resolver
	if w.Filename == "" || w.SHA256 == "" {
		return "", fmt.Errorf("lock %s: no resolver (the pip wheel that installs the wheels): run imagectl lock again", l.Name)
	}
	whl := shell.Quote(wheelDir + "/" + w.Filename)
	return `set -eu
` + shell.Quote(py) + ` -m venv --without-pip ` + initconfig.VenvPath + `
` + initconfig.VenvPath + `/bin/python ` + whl + `/pip install --no-index --no-deps --no-cache-dir --disable-pip-version-check --no-warn-script-location --isolated ` + whl, nil
}

// pipScript installs the layer's wheels with the venv's pip (the lock's
// resolver, installed by venvScript), offline and without dependencies:
// the lock is the closure.
func pipScript(wheels []lock.Wheel) string {
	var reqs []string
	for _, w := range wheels {
		reqs = append(reqs, shell.Quote(w.Name+"=="+w.Version))
	}
	return `set -eu
` + initconfig.VenvPath + `/bin/python -m pip --isolated install --no-index --no-deps --no-cache-dir --disable-pip-version-check --no-warn-script-location \
  --find-links ` + wheelDir + ` ` + strings.Join(reqs, " ")
}

func wheelList(ws []lock.Wheel) string {
	var s []string
	for _, w := range ws {
		s = append(s, w.Name+"=="+w.Version)
	}
	return strings.Join(s, " ")
}

// httpAuth is the auth-header secret option for an HTTP source at u when
// a has a credential for its host: the LLB names the secret's ID only.
func httpAuth(u string, a *auth.Access) []llb.HTTPOption {
	if id, _, ok := a.HTTPAuthSecret(u); ok {
		return []llb.HTTPOption{llb.AuthHeaderSecret(id)}
	}
	return nil
}

func fetchDebs(debs []lock.Deb, a *auth.Access) (llb.State, error) {
	var files []llb.State
	for _, d := range debs {
		dgst, err := sha256Digest(d.SHA256)
		if err != nil {
			return llb.State{}, fmt.Errorf("deb %s %s: %w", d.Name, d.Version, err)
		}
		if d.URL == "" {
			return llb.State{}, fmt.Errorf("deb %s %s: url is empty", d.Name, d.Version)
		}
		hopts := append([]llb.HTTPOption{llb.Checksum(dgst), llb.Filename(debFilename(d)),
			llb.WithCustomName(fmt.Sprintf("fetch deb %s %s", d.Name, d.Version))}, httpAuth(d.URL, a)...)
		files = append(files, llb.HTTP(d.URL, hopts...))
	}
	return llb.Merge(files, llb.WithCustomName("collect debs")), nil
}

func fetchWheels(wheels []lock.Wheel, a *auth.Access) (llb.State, error) {
	var files []llb.State
	for _, w := range wheels {
		dgst, err := sha256Digest(w.SHA256)
		if err != nil {
			return llb.State{}, fmt.Errorf("wheel %s %s: %w", w.Name, w.Version, err)
		}
		if w.URL == "" || w.Filename == "" || strings.ContainsAny(w.Filename, "/\\") {
			return llb.State{}, fmt.Errorf("wheel %s %s: url and a plain filename are required", w.Name, w.Version)
		}
		hopts := append([]llb.HTTPOption{llb.Checksum(dgst), llb.Filename(w.Filename),
			llb.WithCustomName(fmt.Sprintf("fetch wheel %s %s", w.Name, w.Version))}, httpAuth(w.URL, a)...)
		files = append(files, llb.HTTP(w.URL, hopts...))
	}
	return llb.Merge(files, llb.WithCustomName("collect wheels")), nil
}

// debFilename is Debian's pool name, with the epoch colon escaped as the
// archive does.
func debFilename(d lock.Deb) string {
	return fmt.Sprintf("%s_%s_%s.deb", d.Name, strings.ReplaceAll(d.Version, ":", "%3a"), d.Arch)
}

// sha256Digest accepts "hex" or "sha256:hex".
func sha256Digest(s string) (digest.Digest, error) {
	h := strings.TrimPrefix(strings.ToLower(s), "sha256:")
	if !pep.IsSHA256(h) {
		return "", fmt.Errorf("sha256 %q is not 64 hex digits", s)
	}
	return digest.Digest("sha256:" + h), nil
}

// initFiles holds the init binary, from scratch, to be installed by
// initScript (a step like the others, so that its layer's directory times
// are clamped too).
func initFiles(l *lock.Lock, initBin []byte) llb.State {
	t := llb.WithCreatedTime(time.Unix(l.SourceDateEpoch, 0).UTC())
	return llb.Scratch().File(llb.Mkfile("/imagectl-init", 0o755, initBin, t), llb.WithCustomName("[init] files"))
}

var initScript = `set -eu
install -D -m 0755 ` + filesDir + `/imagectl-init ` + initconfig.InitPath

// runtimeFiles holds the runtime config, from scratch, to be installed by
// runtimeStepScript.
func runtimeFiles(l *lock.Lock) (llb.State, error) {
	cfg, err := RuntimeConfig(l)
	if err != nil {
		return llb.State{}, err
	}
	t := llb.WithCreatedTime(time.Unix(l.SourceDateEpoch, 0).UTC())
	fa := llb.Mkfile("/runtime.json", 0o644, cfg, t)
	if c := Constraints(l); c != nil {
		fa = fa.Mkfile("/constraint.txt", 0o644, c, t)
	}
	return llb.Scratch().File(fa, llb.WithCustomName("[runtime] files")), nil
}

var runtimeScript = `set -eu
install -D -m 0644 ` + filesDir + `/runtime.json ` + initconfig.Path + `
if [ -f ` + filesDir + `/constraint.txt ]; then
  install -D -m 0644 ` + filesDir + `/constraint.txt ` + ConstraintPath + `
fi`

// RuntimeConfig returns the JSON baked at initconfig.Path: the lock's
// runtime block with the image facts filled in from the lock.
func RuntimeConfig(l *lock.Lock) ([]byte, error) {
	c := l.Runtime
	f := &c.Image
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&f.Name, l.Name)
	fill(&f.CUDA, l.Core.CUDA)
	fill(&f.Torch, l.Core.Torch)
	fill(&f.Python, l.Core.Python)
	fill(&f.NCCL, l.Core.NCCL)
	fill(&f.CUDNN, l.Core.CUDNN)
	fill(&f.LockDigest, l.Digest)
	fill(&c.DriverFloor, l.Core.DriverFloor)
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the runtime config: %w", err)
	}
	return append(b, '\n'), nil
}
