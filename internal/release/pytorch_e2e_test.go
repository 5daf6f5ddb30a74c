package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/build"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/logs"
	"imagectl/internal/mirror"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

// TestReleasePyTorchSpecEndToEnd runs the shipped specs/pytorch.hcl, with
// only its variables pointed at the fixtures `make up` starts, through
// mirror, lock, build, sign, verify (podman, no GPU here) and promote: the
// python-less nvidia/cuda-shaped upstream bases, the torch-index stand-in
// (plain static HTML, no metadata, a 300 MiB wheel) and the PyPI stand-in.
// The py3.11 images lock (python3.11 from the base's apt repositories, the
// locked pip, each wheel from its one index), build, sign, and fail
// verification with "no GPU visible" while the stand-in torch reports the
// locked versions; the promotion gate refuses them. The py3.10 images fail
// to lock, saying what the base offers. A second lock of a cu124 image reads
// no wheel again.
func TestReleasePyTorchSpecEndToEnd(t *testing.T) {
	env := testenv.Get(t)
	torchIndex, pypiIndex := os.Getenv("IMAGECTL_TORCH_INDEX"), os.Getenv("IMAGECTL_PYPI_INDEX")
	if torchIndex == "" || pypiIndex == "" || env.UpstreamRegistry == "" {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatal("IMAGECTL_E2E=1 but IMAGECTL_TORCH_INDEX, IMAGECTL_PYPI_INDEX or IMAGECTL_UPSTREAM_REGISTRY is not set: run make up")
		}
		t.Skip("the torch index, PyPI and upstream registry stand-ins are not running (make up)")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman is not installed: make deps installs it")
	}
	var logbuf bytes.Buffer
	ctx := logs.With(context.Background(), slog.New(slog.NewTextHandler(&logbuf, nil)))
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()

	vars := map[string]string{
		"registry":      env.Registry,
		"base_registry": env.UpstreamRegistry,
		"torch_index":   torchIndex,
		"pypi_index":    pypiIndex,
	}
	imgs, err := spec.Load(ctx, []string{filepath.Join(env.Root, "specs", "pytorch.hcl")}, spec.WithVars(vars))
	if err != nil {
		t.Fatalf("spec.Load(pytorch.hcl) = %v", err)
	}
	if len(imgs) != 4 {
		t.Fatalf("specs/pytorch.hcl gave %d images, want 4", len(imgs))
	}
	if _, err := mirror.Run(ctx, imgs); err != nil {
		t.Fatalf("mirror.Run() = %v", err)
	}

	dir := t.TempDir()
	pw := e2ePassword
	keys := newE2EKeys(t, dir)
	signKey, signPub, verKey, verPub := keys.signKey, keys.signPub, keys.verKey, keys.verPub
	c := dialE2E(t, ctx, env.BuildkitHost)
	images, cache := filepath.Join(dir, "images"), filepath.Join(dir, "index-cache")
	lockOpts := []resolve.Option{resolve.WithBuildkit(env.BuildkitHost), resolve.WithIndexCache(cache), resolve.WithRoot(env.Root)}
	r, err := NewReal(Config{
		ImagesDir:           images,
		LockMissing:         true,
		LockOptions:         lockOpts,
		Buildkit:            c,
		BuildOptions:        []build.Option{build.WithInit(filepath.Join(env.Bin, "imagectl-init"))},
		SignOptions:         []sign.Option{sign.WithKey(signKey, pw)},
		PublicKey:           signPub,
		VerifierSignOptions: []sign.Option{sign.WithKey(verKey, pw)},
		VerifierPublicKey:   verPub,
		VerifyRuntime:       Container("podman", "", nil),
		Month:               "2026-12",
	})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := Run(ctx, imgs, r, WithJobs(1))
	byName := map[string]Outcome{}
	for _, oc := range out {
		byName[oc.Image] = oc
	}

	for _, n := range []string{"pytorch-2.6-cu118-py3.10", "pytorch-2.6-cu121-py3.10"} {
		oc := byName[n]
		var pe *resolve.PythonError
		if oc.FailedStage != StageLock || !errors.As(oc.Err, &pe) || !strings.Contains(oc.Err.Error(), "offer python3.11; the spec asks python 3.10") {
			t.Errorf("%s: failed stage %q, err %v; want the lock to fail saying the base offers python3.11, not 3.10", n, oc.FailedStage, oc.Err)
		}
	}

	for _, tc := range []struct{ name, variant string }{
		{"pytorch-2.6-cu118-py3.11", "cu118"},
		{"pytorch-2.6-cu121-py3.11", "cu124"},
	} {
		oc := byName[tc.name]
		t.Logf("%s: stages %v, failed %q: %v", tc.name, oc.Done, oc.FailedStage, oc.Err)
		l, err := lock.Read(lock.Path(images, tc.name))
		if err != nil {
			t.Errorf("%s: no lock: %v", tc.name, err)
			continue
		}
		checkPyTorchLock(t, l, tc.variant, strings.TrimRight(torchIndex, "/")+"/whl/"+tc.variant, pypiIndex)
		if oc.FailedStage != StageVerify || exitcode.Code(oc.Err) != exitcode.VerifyFailed || oc.Digest == "" {
			t.Errorf("%s: failed stage %q (exit %d), digest %q; want built, signed and verification failed (exit %d)", tc.name, oc.FailedStage, exitcode.Code(oc.Err), oc.Digest, exitcode.VerifyFailed)
			continue
		}
		checks := map[string]verify.Check{}
		if oc.Result != nil {
			for _, ch := range oc.Result.Checks {
				checks[ch.Name] = ch
			}
		}
		if ch := checks["torch.version"]; ch.Status != verify.Pass || ch.Value != "2.6.0+"+tc.variant {
			t.Errorf("%s: torch.version = %+v, want pass with the stand-in's 2.6.0+%s", tc.name, ch, tc.variant)
		}
		if ch := checks["python.version"]; ch.Status != verify.Pass || !strings.HasPrefix(ch.Value, "3.11.") {
			t.Errorf("%s: python.version = %+v, want pass with 3.11.x", tc.name, ch)
		}
		for name, want := range map[string]string{"torchvision.version": "0.21.0+" + tc.variant, "torchaudio.version": "2.6.0+" + tc.variant} {
			if ch := checks[name]; ch.Status != verify.Pass || ch.Value != want {
				t.Errorf("%s: %s = %+v, want pass with %s", tc.name, name, ch, want)
			}
		}
		if ch := checks["torchvision.cuda_op"]; ch.Status != verify.Skip {
			t.Errorf("%s: torchvision.cuda_op = %+v, want skip (no CUDA device here)", tc.name, ch)
		}
		// The pip guard inside the image: another torch refused, a new
		// project accepted, every locked wheel pinned.
		if ch := checks["pip.constraints"]; ch.Status != verify.Pass || !strings.Contains(ch.Detail, "torch==0.0.1 refused") || ch.Value != fmt.Sprintf("%d pins", len(l.Pip)) {
			t.Errorf("%s: pip.constraints = %+v, want pass with %d pins and torch==0.0.1 refused", tc.name, ch, len(l.Pip))
		}
		gpuFail := false
		for _, ch := range checks {
			if ch.Status == verify.Fail && ch.Detail == "no GPU visible" {
				gpuFail = true
			}
		}
		if !gpuFail {
			t.Errorf("%s: checks %+v, want one failing with \"no GPU visible\"", tc.name, oc.Result.Checks)
		}
		d, err := name.NewDigest(oc.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Promote(ctx, l, d); exitcode.Code(err) != exitcode.PromotionRefused {
			t.Errorf("%s: Promote = %v (exit %d), want the gate's refusal (exit %d)", tc.name, err, exitcode.Code(err), exitcode.PromotionRefused)
		}
	}

	// The big stand-in reached this process at most once in the run, and a
	// second lock reads no wheel at all.
	downloads := downloadBytes(logbuf.String())
	if big := bigWheelBytes(t, env); downloads > big+(16<<20) {
		t.Errorf("the lock run downloaded %d wheel bytes; the big wheel is %d: want it at most once", downloads, big)
	}
	logbuf.Reset()
	var again spec.Image
	for _, img := range imgs {
		if img.Name == "pytorch-2.6-cu121-py3.11" {
			again = img
		}
	}
	if _, err := resolve.Image(ctx, again, lockOpts...); err != nil {
		t.Fatalf("second lock of %s = %v", again.Name, err)
	}
	if n := downloadBytes(logbuf.String()); n != 0 {
		t.Errorf("second lock of %s downloaded %d wheel bytes, want 0 (metadata cached by sha256)", again.Name, n)
	}
}

var downloadRE = regexp.MustCompile(`msg="index traffic".* download_bytes=(\d+)`)

func downloadBytes(log string) int64 {
	var n int64
	for _, m := range downloadRE.FindAllStringSubmatch(log, -1) {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		n += v
	}
	return n
}

func bigWheelBytes(t *testing.T, env testenv.Env) int64 {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(os.Getenv("IMAGECTL_STANDINS_DIR"), "torch", "whl", "cu124", "nvidia_cudnn_cu12-*.whl"))
	if len(m) != 1 {
		t.Fatalf("the big stand-in wheel is not under IMAGECTL_STANDINS_DIR: %v", m)
	}
	st, err := os.Stat(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// checkPyTorchLock checks what the lock of a py3.11 image must say: python
// from the base's apt, the pip resolver from PyPI, the torch stack from the
// torch index and nothing else from it.
func checkPyTorchLock(t *testing.T, l *lock.Lock, variant, torchIx, pypiIx string) {
	t.Helper()
	if l.Python.Provider != "apt" || l.Python.Path != "/usr/bin/python3.11" || !strings.HasPrefix(l.Python.Version, "3.11.") {
		t.Errorf("%s: python = %+v, want python3.11 at /usr/bin/python3.11 from the base's apt", l.Name, l.Python)
	}
	hasDeb := map[string]bool{}
	for _, d := range l.Apt {
		hasDeb[d.Name] = true
	}
	if !hasDeb["python3.11"] || !hasDeb["python3.11-venv"] {
		t.Errorf("%s: apt closure lacks python3.11 / python3.11-venv", l.Name)
	}
	if l.Resolver.Name != "pip" || l.Resolver.Index != pypiIx || l.Resolver.SHA256 == "" {
		t.Errorf("%s: resolver = %+v, want pip from %s", l.Name, l.Resolver, pypiIx)
	}
	want := map[string]struct{ version, index string }{
		"torch":    {"2.6.0+" + variant, torchIx},
		"triton":   {"3.2.0", torchIx},
		"numpy":    {"2.2.1", pypiIx},
		"filelock": {"3.16.1", pypiIx}, // the torch index's re-hosted 3.13.1 must not win
		"sympy":    {"1.13.1", pypiIx},
		// The torch family: no version in the spec, lint filled in the
		// ones released with 2.6.0; the PyPI decoy torchvision must lose.
		"torchvision":  {"0.21.0+" + variant, torchIx},
		"torchaudio":   {"2.6.0+" + variant, torchIx},
		"transformers": {"4.48.0", pypiIx},
		"jupyterlab":   {"4.3.4", pypiIx},
	}
	cu := "cu12"
	if variant == "cu118" {
		cu = "cu11"
	}
	want["nvidia-nccl-"+cu] = struct{ version, index string }{"2.21.5", torchIx}
	want["nvidia-cudnn-"+cu] = struct{ version, index string }{"9.1.0.70", torchIx}
	got := map[string]lock.Wheel{}
	for _, w := range l.Pip {
		got[w.Name] = w
		torchy := w.Name == "torch" || w.Name == "triton" || w.Name == "torchvision" || w.Name == "torchaudio" || strings.HasPrefix(w.Name, "nvidia-")
		if torchy != (w.Index == torchIx) {
			t.Errorf("%s: %s came from %s", l.Name, w.Name, w.Index)
		}
	}
	for n, w := range want {
		if g := got[n]; g.Version != w.version || g.Index != w.index || !strings.HasPrefix(g.URL, strings.TrimSuffix(w.index, "simple/")) {
			t.Errorf("%s: %s = %+v, want %s from %s", l.Name, n, g, w.version, w.index)
		}
	}
}
