package verify

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"imagectl/internal/exitcode"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
)

// e2eImage builds a small image from the local Debian base (python3 and
// the venv bootstrap, no torch): imagectl-init as the entrypoint and a baked
// runtime config, written as an OCI layout. It returns oci:DIR and the
// image's digest reference.
func e2eImage(t testing.TB, e testenv.Env, rc initconfig.Config) (string, name.Digest, v1.Image) {
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

// TestPodmanE2E runs the podman path for real on a machine without GPUs:
// a GPU image fails with "no GPU visible" (exit 4); the same image marked
// CPU-only passes with the GPU checks skipped. The probes run behind the
// image's entrypoint, the init, so TMPDIR and the fingerprint are checked
// as the init set them.
func TestPodmanE2E(t *testing.T) {
	e := testenv.Get(t)
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatalf("IMAGECTL_E2E=1 but podman is missing (hack/deps.sh installs it): %v", err)
		}
		t.Skipf("podman is not installed: %v", err)
	}
	if _, err := (NVML{}).Probe(context.Background()); !errors.Is(err, ErrNoGPU) {
		t.Skipf("this test expects a machine without GPUs; NVML says %v", err)
	}
	rc := initconfig.Config{
		MinShmBytes:     256 << 20,
		TmpDir:          "/tmp/imagectl-tmp",
		DriverFloor:     "525.60.13",
		DriverPolicy:    "warn",
		FingerprintPath: "/tmp/imagectl-fingerprint.json",
	}
	src, ref, img := e2eImage(t, e, rc)
	l := &lock.Lock{
		SchemaVersion: lock.SchemaVersion,
		Name:          "verify-e2e",
		Core:          lock.Core{Python: "3.11", DriverFloor: "525.60.13"},
		Runtime:       rc,
	}
	if _, err := lock.Marshal(l); err != nil {
		t.Fatal(err)
	}
	run := func(l *lock.Lock) (*Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		return Run(ctx, l, WithImage(ref), WithRuntime(&Podman{Image: src, Python: "python3", ShmSize: "512m"}))
	}

	t.Run("gpu image fails", func(t *testing.T) {
		res, err := run(l)
		if code := exitcode.Code(err); code != exitcode.VerifyFailed {
			if res != nil {
				for _, c := range res.Checks {
					t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
				}
			}
			t.Fatalf("Run() error = %v (code %d), want code %d", err, code, exitcode.VerifyFailed)
		}
		c := statuses(res)
		if c["gpu.visible"].Status != Fail || c["gpu.visible"].Value != "no GPU visible" {
			t.Errorf("gpu.visible = %+v, want fail \"no GPU visible\"", c["gpu.visible"])
		}
		for _, n := range []string{"python.version", "pip.packages", "shm.size", "tmpdir", "init.fingerprint"} {
			if c[n].Status != Pass {
				t.Errorf("check %s = %s (%s), want pass", n, c[n].Status, c[n].Detail)
			}
		}
		if res.Runtime != "podman" || res.Digest != ref.DigestStr() {
			t.Errorf("result runtime %q digest %q, want podman %s", res.Runtime, res.Digest, ref.DigestStr())
		}
	})

	t.Run("cpu-only image passes", func(t *testing.T) {
		cpu := *l
		cpu.Verify.CPUOnly = true
		res, err := run(&cpu)
		if err != nil {
			t.Fatalf("Run() error = %v, want nil", err)
		}
		c := statuses(res)
		if c["gpu.visible"].Status != Skip || c["driver.version"].Status != Skip {
			t.Errorf("gpu.visible %s, driver.version %s, want both skipped", c["gpu.visible"].Status, c["driver.version"].Status)
		}
		out, _ := json.Marshal(res)
		t.Logf("result: %s", out)

		// The signed result verifies with the stock cosign CLI.
		pushed, err := name.NewDigest(fmt.Sprintf("%s/verify-e2e-%d/demo@%s", e.Registry, time.Now().UnixNano(), ref.DigestStr()), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(pushed, img); err != nil {
			t.Fatalf("pushing to the local registry: %v", err)
		}
		priv, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte("e2e"))
		if err != nil {
			t.Fatal(err)
		}
		// The run of the oci: layout proves nothing about the digest: not signed.
		var ue *UnsignableError
		if err := Attest(context.Background(), pushed, res, sign.WithKey(priv, []byte("e2e"))); !errors.As(err, &ue) {
			t.Fatalf("Attest() of the oci: layout's result = %v, want *UnsignableError", err)
		}
		// podman pulling the pushed digest does.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		res, err = Run(ctx, &cpu, WithImage(pushed), WithRuntime(&Podman{Image: pushed.String(), Python: "python3", ShmSize: "512m"}))
		if err != nil || res.Proof != ProofRuntime {
			t.Fatalf("Run(podman %s) = proof %q, %v; want the runtime proof", pushed, res.Proof, err)
		}
		if err := Attest(context.Background(), pushed, res, sign.WithKey(priv, []byte("e2e"))); err != nil {
			t.Fatalf("Attest() error = %v", err)
		}
		got := cosignVerifiedResult(t, e, pub, pushed)
		if !got.Passed || got.Digest != ref.DigestStr() {
			t.Errorf("cosign-verified predicate: passed %v digest %q, want true %s", got.Passed, got.Digest, ref.DigestStr())
		}
	})
}
