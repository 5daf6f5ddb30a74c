package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/moby/buildkit/client"

	"imagectl/internal/auth"
	"imagectl/internal/build"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/logs"
	"imagectl/internal/mirror"
	"imagectl/internal/promote"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
	"imagectl/internal/wheelhouse"
)

// syncBuffer is a bytes.Buffer several goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// TestReleasePrivateEndToEnd mirrors the base and runs the demo release
// (lock -> build -> sign -> verify -> promote -> pin) against the registry behind htpasswd over
// TLS and the wheel index behind basic auth over TLS that `make up`
// starts, with the credentials from a Docker config and a netrc and the CA
// from --ca-file. Then, with the credentials removed, each stage fails with
// exit 77 naming the host. Last, it greps every log, the lock, the LLB, the
// image's layers, the signatures and attestations, the release file and
// every error for the password, and finds none.
func TestReleasePrivateEndToEnd(t *testing.T) {
	env := testenv.Get(t)
	pv := testenv.GetPrivate(t)
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatalf("podman is not installed: make deps installs it")
		}
		t.Skip("podman is not installed; the verify stage runs the image with it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var logBuf syncBuffer
	ctx = logs.With(ctx, slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})))

	t.Setenv("DOCKER_CONFIG", pv.DockerConfig)
	noDocker := t.TempDir() // a Docker config without any login
	if err := os.WriteFile(filepath.Join(noDocker, "config.json"), []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	access, err := auth.New(auth.Config{CAFiles: []string{pv.CA}, NetrcFile: pv.Netrc})
	if err != nil {
		t.Fatal(err)
	}
	noNetrc, err := auth.New(auth.Config{CAFiles: []string{pv.CA}})
	if err != nil {
		t.Fatal(err)
	}
	indexHost := hostOf(t, pv.Index)

	// The local base, mirrored into the private registry with the login.
	baseRepo, err := name.NewRepository(pv.Registry + "/imagectl/debian-base")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mirror.Copy(ctx, env.Base, baseRepo, mirror.WithAccess(access)); err != nil {
		t.Fatalf("mirror.Copy(%s, %s) = %v", env.Base, baseRepo, err)
	}

	imgs, err := spec.Load(ctx, []string{filepath.Join(env.Root, "specs", "demo.hcl")},
		spec.WithVars(map[string]string{"registry": pv.Registry, "wheel_index": pv.Index}))
	if err != nil {
		t.Fatalf("spec.Load(demo) = %v", err)
	}
	run := fmt.Sprintf("e2e-private-%d", time.Now().UnixNano())
	for i := range imgs {
		imgs[i].Repos = spec.Repos{
			Staging: pv.Registry + "/" + run + "/staging/" + imgs[i].Name,
			Release: pv.Registry + "/" + run + "/" + imgs[i].Name,
		}
	}
	dir := t.TempDir()
	pw := e2ePassword
	keys := newE2EKeys(t, dir)
	signKey, signPub, verKey, verPub := keys.signKey, keys.signPub, keys.verKey, keys.verPub
	c := dialE2E(t, ctx, env.BuildkitHost)
	initBin := filepath.Join(env.Bin, "imagectl-init")
	stages := func(images string, a *auth.Access) *Real {
		r, err := NewReal(Config{
			ImagesDir:    images,
			LockMissing:  true,
			LockOptions:  []resolve.Option{resolve.WithBuildkit(env.BuildkitHost), resolve.WithAccess(a)},
			Buildkit:     c,
			BuildOptions: []build.Option{build.WithInit(initBin), build.WithAccess(a)},
			BuildStatus: func(string) (chan *client.SolveStatus, func()) {
				ch := make(chan *client.SolveStatus)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for s := range ch {
						for _, v := range s.Vertexes {
							fmt.Fprintf(&logBuf, "vertex %s %s\n", v.Name, v.Error)
						}
						for _, l := range s.Logs {
							logBuf.Write(l.Data)
						}
					}
				}()
				return ch, func() { <-done }
			},
			SignOptions:         []sign.Option{sign.WithKey(signKey, pw)},
			PublicKey:           signPub,
			VerifierSignOptions: []sign.Option{sign.WithKey(verKey, pw)},
			VerifierPublicKey:   verPub,
			VerifyRuntime:       Container("podman", "", nil),
			Month:               "2026-11",
			Access:              a,
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	images := filepath.Join(dir, "images")
	out, err := Run(ctx, imgs, stages(images, access))
	if err != nil {
		t.Fatalf("Run() against the private registry and index = %v\nlog:\n%s", err, tail(logBuf.Bytes()))
	}
	oc := out[0]
	if oc.Result == nil || !oc.Result.Passed || oc.Promoted.Reference == "" {
		t.Fatalf("release = %+v, want verified and promoted", oc)
	}
	l, err := lock.Read(lock.Path(images, "demo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range l.Pip {
		if !strings.HasPrefix(w.URL, strings.TrimSuffix(pv.Index, "simple/")) {
			t.Errorf("wheel %s comes from %s, want the private index %s", w.Name, w.URL, pv.Index)
		}
	}
	tag, err := name.NewTag(imgs[0].Repos.Release + ":demo")
	if err != nil {
		t.Fatal(err)
	}
	trust := []promote.Option{promote.WithTrustedKeys(signPub), promote.WithVerifierKeys(verPub)}
	pinned, err := promote.Pin(ctx, tag, append(trust, promote.WithAccess(access))...)
	if err != nil || pinned.Ref != oc.Promoted.Reference {
		t.Fatalf("Pin(%s) = %+v, %v; want %s", tag, pinned, err, oc.Promoted.Reference)
	}
	d, err := name.NewDigest(oc.Ref)
	if err != nil {
		t.Fatal(err)
	}

	// Without the credentials, each stage fails with exit 77 naming the host.
	var stageErrs []error
	denied := func(t *testing.T, stage string, err error, host string) {
		t.Helper()
		stageErrs = append(stageErrs, err)
		var ae *auth.Error
		if !errors.As(err, &ae) || exitcode.Code(err) != exitcode.AuthFailed || ae.Host != host {
			t.Errorf("%s without credentials = %v (exit %d), want an *auth.Error for %s, exit %d", stage, err, exitcode.Code(err), host, exitcode.AuthFailed)
			return
		}
		if !strings.Contains(err.Error(), host) || !strings.Contains(err.Error(), "credentials tried") {
			t.Errorf("%s: error %q does not name %s and the credentials tried", stage, err, host)
		}
	}
	t.Run("mirror without the Docker config", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", noDocker)
		repo, err := name.NewRepository(pv.Registry + "/" + run + "/mirror/debian-base")
		if err != nil {
			t.Fatal(err)
		}
		_, err = mirror.Copy(ctx, env.Base, repo, mirror.WithAccess(access))
		denied(t, "mirror", err, pv.Registry)
	})
	t.Run("lock without the netrc", func(t *testing.T) {
		_, err := stages(t.TempDir(), noNetrc).Lock(ctx, imgs[0])
		denied(t, "lock", err, indexHost)
	})
	t.Run("build without the netrc", func(t *testing.T) {
		// A wheel no build has fetched yet: BuildKit's cache would answer
		// for one it has (it is keyed by content), without asking the index.
		f, err := wheelhouse.Publish(pv.WheelsDir, wheelhouse.Spec{Name: "demo-nocache", Version: fmt.Sprintf("1.0.%d", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			os.Remove(filepath.Join(pv.WheelsDir, "files", f.Filename))
			wheelhouse.WriteIndex(pv.WheelsDir)
		})
		l2 := *l
		l2.Pip = append(append([]lock.Wheel(nil), l.Pip...), lock.Wheel{Name: "demo-nocache", Version: f.Version,
			Filename: f.Filename, URL: strings.TrimSuffix(pv.Index, "simple/") + "files/" + f.Filename, SHA256: f.SHA256, Size: f.Size})
		_, err = stages(t.TempDir(), noNetrc).Build(ctx, &l2)
		denied(t, "build (index)", err, indexHost)
	})
	t.Run("lock without the Docker config", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", noDocker)
		_, err := stages(t.TempDir(), access).Lock(ctx, imgs[0])
		denied(t, "lock", err, pv.Registry)
	})
	t.Run("build without the Docker config", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", noDocker)
		_, err := stages(t.TempDir(), access).Build(ctx, l)
		denied(t, "build", err, pv.Registry)
	})
	t.Run("sign, verify, promote, pin without the Docker config", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", noDocker)
		r := stages(images, access)
		denied(t, "sign", r.Sign(ctx, l, d), pv.Registry)
		_, err := r.Verify(ctx, l, d)
		denied(t, "verify", err, pv.Registry)
		_, err = r.Promote(ctx, l, d)
		denied(t, "promote", err, pv.Registry)
		_, err = promote.Pin(ctx, tag, append(trust, promote.WithAccess(access))...)
		denied(t, "pin", err, pv.Registry)
		// The CLI maps it to exit 77 and says where it looked.
		cmd := exec.CommandContext(ctx, filepath.Join(env.Bin, "imagectl"), "pin", tag.String(),
			"--key", signPub, "--verifier-key", verPub, "--ca-file", pv.CA)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+noDocker)
		b, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitcode.AuthFailed || !strings.Contains(string(b), pv.Registry) || !strings.Contains(string(b), noDocker) {
			t.Errorf("imagectl pin without credentials = %v:\n%s\nwant exit %d naming %s and %s", err, b, exitcode.AuthFailed, pv.Registry, noDocker)
		}
		stageErrs = append(stageErrs, errors.New(string(b)))
	})

	// The password is nowhere (the netrc given holds it: the grep can see it).
	secret := []byte(pv.Password)
	if b, err := os.ReadFile(pv.Netrc); err != nil || !bytes.Contains(b, secret) {
		t.Fatalf("the netrc %s does not hold the password the test greps for (%v)", pv.Netrc, err)
	}
	where := map[string][]byte{"the test's logs and BuildKit progress": logBuf.Bytes()}
	for _, e := range stageErrs {
		if e != nil {
			where["error: "+e.Error()] = []byte(e.Error())
		}
	}
	logsDir := filepath.Join(env.Root, ".cache", "logs")
	entries, _ := os.ReadDir(logsDir)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(logsDir, e.Name())); err == nil {
			where[filepath.Join(logsDir, e.Name())] = b
		}
	}
	filepath.WalkDir(images, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				where[p] = b
			}
		}
		return nil
	})
	def, err := build.Definition(ctx, l, build.WithInit(initBin), build.WithAccess(access))
	if err != nil {
		t.Fatal(err)
	}
	llb, _ := def.ToPB().MarshalVT()
	where["the build's LLB"] = llb
	for _, ref := range []string{imgs[0].Repos.Staging, imgs[0].Repos.Release} {
		repo, err := name.NewRepository(ref)
		if err != nil {
			t.Fatal(err)
		}
		tags, err := remote.List(repo, append(access.RemoteOptions(), remote.WithContext(ctx))...)
		if err != nil {
			t.Fatalf("listing %s: %v", repo, err)
		}
		if len(tags) < 2 {
			t.Errorf("%s has tags %v, want at least the .sig and .att", repo, tags)
		}
		refs := []string{d.String()}
		for _, tg := range tags {
			refs = append(refs, repo.Tag(tg).String())
		}
		for _, r := range refs {
			for what, b := range imageContents(ctx, t, r, access) {
				where[what] = b
			}
		}
	}
	for _, typ := range []string{sign.LockPredicateType, sign.SPDXPredicateType, sign.CycloneDXPredicateType, sign.ProvenancePredicateType} {
		preds, err := sign.VerifyAttestations(ctx, d, typ, signPub, sign.WithAccess(access))
		if err != nil {
			t.Fatalf("reading the %s attestation: %v", typ, err)
		}
		for i, p := range preds {
			where[fmt.Sprintf("%s attestation %d", typ, i)] = p
		}
	}
	if preds, err := sign.VerifyAttestations(ctx, d, verify.PredicateType, verPub, sign.WithAccess(access)); err == nil {
		for i, p := range preds {
			where[fmt.Sprintf("verification attestation %d", i)] = p
		}
	} else {
		t.Errorf("reading the verification attestation: %v", err)
	}
	n := 0
	for what, b := range where {
		n++
		if bytes.Contains(b, secret) {
			t.Errorf("%s contains the password", what)
		}
	}
	t.Logf("grepped %d logs, files, layers and attestations for the password", n)
	if n < 20 {
		t.Errorf("only %d places grepped; the registry listing or the logs are missing", n)
	}
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// imageContents returns the raw manifest, the config and every layer's
// uncompressed bytes (the tar of a filesystem layer; the DSSE envelope or
// signature payload of a .att or .sig layer) of ref.
func imageContents(ctx context.Context, t *testing.T, ref string, a *auth.Access) map[string][]byte {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r, append(a.RemoteOptions(), remote.WithContext(ctx))...)
	if err != nil {
		t.Fatalf("reading %s: %v", ref, err)
	}
	out := map[string][]byte{}
	m, _ := img.RawManifest()
	out[ref+" manifest"] = m
	cfg, _ := img.RawConfigFile()
	out[ref+" config"] = cfg
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatalf("%s layer %d: %v", ref, i, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s layer %d: %v", ref, i, err)
		}
		out[fmt.Sprintf("%s layer %d", ref, i)] = b
	}
	return out
}

func tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}
