package podman

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/exitcode"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
	"imagectl/internal/verify/verifytest"
)

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
	if _, err := (verify.NVML{}).Probe(context.Background()); !errors.Is(err, verify.ErrNoGPU) {
		t.Skipf("this test expects a machine without GPUs; verify.NVML says %v", err)
	}
	rc := initconfig.Config{
		MinShmBytes:     256 << 20,
		TmpDir:          "/tmp/imagectl-tmp",
		DriverFloor:     "525.60.13",
		DriverPolicy:    "warn",
		FingerprintPath: "/tmp/imagectl-fingerprint.json",
	}
	src, ref, img := verifytest.Image(t, e, rc)
	l := &lock.Lock{
		SchemaVersion: lock.SchemaVersion,
		Name:          "verify-e2e",
		Core:          lock.Core{Python: "3.11", DriverFloor: "525.60.13"},
		Runtime:       rc,
	}
	if _, err := lock.Marshal(l); err != nil {
		t.Fatal(err)
	}
	run := func(l *lock.Lock) (*verify.Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		return verify.Run(ctx, l, verify.WithImage(ref), verify.WithRuntime(mustNew(t, src, WithPython("python3"), WithShmSize("512m"))))
	}

	t.Run("gpu image fails", func(t *testing.T) {
		res, err := run(l)
		if code := exitcode.Code(err); code != exitcode.VerifyFailed {
			if res != nil {
				for _, c := range res.Checks {
					t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
				}
			}
			t.Fatalf("verify.Run() error = %v (code %d), want code %d", err, code, exitcode.VerifyFailed)
		}
		c := verifytest.Statuses(res)
		if c["gpu.visible"].Status != verify.Fail || c["gpu.visible"].Value != "no GPU visible" {
			t.Errorf("gpu.visible = %+v, want fail \"no GPU visible\"", c["gpu.visible"])
		}
		for _, n := range []string{"python.version", "pip.packages", "shm.size", "tmpdir", "init.fingerprint"} {
			if c[n].Status != verify.Pass {
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
			t.Fatalf("verify.Run() error = %v, want nil", err)
		}
		c := verifytest.Statuses(res)
		if c["gpu.visible"].Status != verify.Skip || c["driver.version"].Status != verify.Skip {
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
		var ue *verify.UnsignableError
		if err := verify.Attest(context.Background(), pushed, res, sign.WithKey(priv, []byte("e2e"))); !errors.As(err, &ue) {
			t.Fatalf("verify.Attest() of the oci: layout's result = %v, want *verify.UnsignableError", err)
		}
		// podman pulling the pushed digest does.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		res, err = verify.Run(ctx, &cpu, verify.WithImage(pushed), verify.WithRuntime(mustNew(t, pushed.String(), WithPython("python3"), WithShmSize("512m"))))
		if err != nil || res.Proof != verify.ProofRuntime {
			t.Fatalf("verify.Run(podman %s) = proof %q, %v; want the runtime proof", pushed, res.Proof, err)
		}
		if err := verify.Attest(context.Background(), pushed, res, sign.WithKey(priv, []byte("e2e"))); err != nil {
			t.Fatalf("verify.Attest() error = %v", err)
		}
		got := verifytest.CosignVerifiedResult(t, e, pub, pushed)
		if !got.Passed || got.Digest != ref.DigestStr() {
			t.Errorf("cosign-verified predicate: passed %v digest %q, want true %s", got.Passed, got.Digest, ref.DigestStr())
		}
	})
}

func mustNew(t testing.TB, image string, opts ...Option) *Runtime {
	t.Helper()
	rt, err := New(image, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
