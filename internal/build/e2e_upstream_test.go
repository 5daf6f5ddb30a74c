package build

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"imagectl/internal/build/layerplan"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/mirror"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
)

// sshImage is a spec image with openssh-server on base, ssh_key_only on.
func sshImage(env testenv.Env, base, mirrorRepo, repo string) spec.Image {
	return spec.Image{
		Name:   "ssh",
		Base:   base,
		Python: "3.11",
		Apt:    []string{"openssh-server"},
		Env:    map[string]string{"PYTHONUNBUFFERED": "1"},
		Repos: spec.Repos{
			Staging: env.Registry + "/e2e/staging/" + repo,
			Release: env.Registry + "/e2e/" + repo,
			Mirror:  mirrorRepo,
		},
		Policy: spec.Policy{SSHKeyOnly: true},
	}
}

// TestE2EUpstreamBaseSSH mirrors the upstream nvidia/cuda fixture, locks
// openssh-server on it (the base resolved in the mirror), and builds it twice
// from empty caches: one digest; the base's CUDA environment kept in the
// image config; no sshd host key in any layer; the ssh_key_only drop-in in
// place.
func TestE2EUpstreamBaseSSH(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	upstream := e.env.UpstreamCUDA(t, "12.1.1-runtime-ubuntu22.04")
	m := e.env.Registry + "/" + uniq("e2e-mirror")
	img := sshImage(e.env, upstream, m, uniq("ssh"))
	if _, err := mirror.Run(ctx, []spec.Image{img}); err != nil {
		t.Fatalf("mirror: %v", err)
	}
	l, err := resolve.Image(ctx, img, resolve.WithBuildkit(e.env.BuildkitHost))
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	if l.Base.Ref != upstream || l.Base.Mirror != m+"/nvidia/cuda" {
		t.Errorf("lock base = %+v, want ref %s mirrored in %s/nvidia/cuda", l.Base, upstream, m)
	}
	if p := layerplan.Of(l).Base; !strings.HasPrefix(p, m+"/nvidia/cuda@sha256:") {
		t.Errorf("the build pulls %s, want the mirror's copy", p)
	}

	var digests []string
	var last *Result
	for i := range 2 {
		prune(t, e.c)
		r, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true))
		if err != nil {
			t.Fatalf("build %d: %v", i+1, err)
		}
		t.Logf("clean build %d: %s (%d bytes)", i+1, r.Digest, r.Size)
		digests = append(digests, r.Digest)
		last = r
	}
	if digests[0] != digests[1] {
		t.Errorf("two clean builds with openssh-server: %s != %s", digests[0], digests[1])
	}

	ref, err := name.NewDigest(last.Ref)
	if err != nil {
		t.Fatal(err)
	}
	built, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := built.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range cf.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, want := range map[string]string{
		"LD_LIBRARY_PATH":            "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
		"NVIDIA_VISIBLE_DEVICES":     "all",
		"NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
		"CUDA_VERSION":               "12.1.1",
		"NV_CUDA_CUDART_VERSION":     "12.1.105-1",
		"PYTHONUNBUFFERED":           "1",
	} {
		if env[k] != want {
			t.Errorf("built image env %s=%q, want %q (env %v)", k, env[k], want, cf.Config.Env)
		}
	}
	if !strings.HasPrefix(env["NVIDIA_REQUIRE_CUDA"], "cuda>=12.1 ") {
		t.Errorf("built image NVIDIA_REQUIRE_CUDA=%q, want the base's", env["NVIDIA_REQUIRE_CUDA"])
	}
	if want := "/usr/local/nvidia/bin:/usr/local/cuda/bin:"; !strings.Contains(env["PATH"], want) {
		t.Errorf("built image PATH=%q, want the base's %s kept", env["PATH"], want)
	}
	if cf.Config.Labels["maintainer"] != "NVIDIA CORPORATION <cudatools@nvidia.com>" {
		t.Errorf("built image labels %v, want the base's maintainer kept", cf.Config.Labels)
	}

	files := layerFiles(t, built)
	for f := range files {
		if strings.HasPrefix(f, "etc/ssh/ssh_host_") {
			t.Errorf("a layer holds the host key %s", f)
		}
	}
	if _, ok := files["usr/sbin/sshd"]; !ok {
		t.Errorf("the image has no usr/sbin/sshd: openssh-server was not installed")
	}
	dropIn := strings.TrimPrefix(SSHKeyOnlyDropIn, "/")
	if !strings.Contains(files[dropIn], "PasswordAuthentication no") {
		t.Errorf("%s = %q, want the ssh_key_only drop-in", dropIn, files[dropIn])
	}
}

// TestE2ESSHKeyOnlyRejects builds openssh-server on a base whose own
// sshd_config allows passwords and does not include sshd_config.d: the
// drop-in cannot win, sshd -T in the build says so, and nothing is pushed.
func TestE2ESSHKeyOnlyRejects(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	upstream := e.env.UpstreamCUDA(t, "11.8.0-runtime-ubuntu22.04")
	base := passwordBase(t, upstream, e.env.Registry+"/"+uniq("e2e-pwbase")+":sshd")
	img := sshImage(e.env, base, "", uniq("ssh-reject"))
	l, err := resolve.Image(ctx, img, resolve.WithBuildkit(e.env.BuildkitHost))
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	_, err = Solve(ctx, e.c, l, WithInit(e.init), WithPush(true))
	var pe *SSHPolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("build with a password-allowing sshd: %v, want an SSHPolicyError", err)
	}
	t.Logf("rejected: %v", err)
	if pe.Offending["passwordauthentication"] != "yes" {
		t.Errorf("offending settings %v, want passwordauthentication yes", pe.Offending)
	}
	repo, _ := name.NewRepository(l.Repos.Staging)
	if tags, err := remote.List(repo); err == nil && len(tags) > 0 {
		t.Errorf("staging %s has tags %v after a refused build", repo, tags)
	}
	if _, err := remote.Head(repo.Digest(l.Digest)); err == nil {
		t.Errorf("something was pushed to %s", repo)
	}
}

// passwordBase pushes upstream's linux/amd64 image plus a layer with an old
// style /etc/ssh/sshd_config (no Include, passwords on) as ref.
func passwordBase(t *testing.T, upstream, ref string) string {
	t.Helper()
	src, err := name.ParseReference(upstream)
	if err != nil {
		t.Fatal(err)
	}
	base, err := remote.Image(src, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		t.Fatal(err)
	}
	conf := "# an sshd_config from before sshd_config.d\nPasswordAuthentication yes\nKbdInteractiveAuthentication no\nUsePAM yes\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "etc/ssh/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "etc/ssh/sshd_config", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(conf))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Write([]byte(conf))
	tw.Close()
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(dst, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

// layerFiles maps every regular file and link in img's layers to its
// content (links to their target), later layers winning.
func layerFiles(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n := strings.TrimPrefix(h.Name, "./")
			switch h.Typeflag {
			case tar.TypeReg:
				b, _ := io.ReadAll(io.LimitReader(tr, 1<<16))
				files[n] = string(b)
			case tar.TypeSymlink, tar.TypeLink:
				files[n] = h.Linkname
			}
		}
		rc.Close()
	}
	return files
}
