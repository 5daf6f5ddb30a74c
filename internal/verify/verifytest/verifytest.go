// Package verifytest holds what the tests of the verification runtimes
// share: the end-to-end demo image and reading a signed result back.
package verifytest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	iruntime "imagectl/internal/runtime"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

// Image builds a small image from the local Debian base (python3 and
// the venv bootstrap, no torch): imagectl-init as the entrypoint and a baked
// runtime config, written as an OCI layout. It returns oci:DIR and the
// image's digest reference.
func Image(t testing.TB, e testenv.Env, rc initconfig.Config) (string, name.Digest, v1.Image) {
	t.Helper()
	baseRef, err := name.ParseReference(e.Base, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	base, err := remote.Image(baseRef)
	if err != nil {
		t.Fatalf("pulling the local base %s: %v", e.Base, err)
	}
	initBin, err := os.ReadFile(filepath.Join(e.Bin, "imagectl-init"))
	if err != nil {
		t.Fatalf("reading the init (make build writes it): %v", err)
	}
	cfgJSON, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"usr/local/bin/imagectl-init", 0o755, initBin},
		{"etc/imagectl/runtime.json", 0o644, cfgJSON},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Entrypoint = []string{"/usr/local/bin/imagectl-init", "--"}
	cf.Config.Cmd = nil
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	// podman names an oci: image after its path, and names must be lowercase
	// (t.TempDir has the test's name in it).
	dir, err := os.MkdirTemp("", "imagectl-verify-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// podman copied the layout into its storage as localhost<dir>.
		_ = exec.Command("podman", "rmi", "--force", "localhost"+dir).Run()
		os.RemoveAll(dir)
	})
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewDigest("localhost/imagectl/verify-e2e@" + d.String())
	if err != nil {
		t.Fatal(err)
	}
	return "oci:" + dir, ref, img
}

// PushedDemo builds the demo image (Image: the init, a baked runtime
// config, python3, no torch) and pushes it to a fresh repository of the
// local registry; it returns the pushed digest, the image and its lock.
func PushedDemo(t testing.TB, e testenv.Env, prefix string) (name.Digest, v1.Image, *lock.Lock) {
	t.Helper()
	rc := iruntime.Config{
		MinShmBytes:     256 << 20,
		TmpDir:          "/tmp/imagectl-tmp",
		DriverFloor:     "525.60.13",
		DriverPolicy:    "warn",
		FingerprintPath: "/tmp/imagectl-fingerprint.json",
	}
	_, local, img := Image(t, e, rc)
	ref, err := name.NewDigest(fmt.Sprintf("%s/%s-%d/demo@%s", e.Registry, prefix, time.Now().UnixNano(), local.DigestStr()), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("pushing to the local registry: %v", err)
	}
	l := &lock.Lock{
		SchemaVersion: lock.SchemaVersion,
		Name:          prefix,
		Core:          lock.Core{Python: "3.11", DriverFloor: "525.60.13"},
		Runtime:       rc,
	}
	if _, err := lock.Marshal(l); err != nil {
		t.Fatal(err)
	}
	return ref, img, l
}

// CosignVerifiedResult checks the verification attestation on ref with the
// stock cosign CLI and returns its predicate.
func CosignVerifiedResult(t testing.TB, e testenv.Env, pub string, ref name.Digest) verify.Result {
	t.Helper()
	cmd := exec.Command(filepath.Join(e.Bin, "cosign"), "verify-attestation", "--key", pub, "--insecure-ignore-tlog",
		"--allow-insecure-registry", "--type", verify.PredicateType, ref.String())
	stdout, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Logf("cosign stderr: %s", ee.Stderr)
		}
		t.Fatalf("cosign verify-attestation: %v", err)
	}
	var env struct {
		Payload []byte `json:"payload"`
	}
	if err := json.Unmarshal(bytes.SplitN(stdout, []byte("\n"), 2)[0], &env); err != nil {
		t.Fatalf("cosign output %q: %v", stdout, err)
	}
	var st struct {
		Predicate verify.Result `json:"predicate"`
	}
	if err := json.Unmarshal(env.Payload, &st); err != nil {
		t.Fatal(err)
	}
	return st.Predicate
}

// Statuses returns res's checks by name.
func Statuses(res *verify.Result) map[string]verify.Check {
	m := map[string]verify.Check{}
	for _, c := range res.Checks {
		m[c.Name] = c
	}
	return m
}

// Ref is a digest reference for tests that run nothing.
var Ref = func() name.Digest {
	d, err := name.NewDigest("localhost:5000/pytorch@sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		panic(err)
	}
	return d
}()
