package containerd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
	"imagectl/internal/verify/verifytest"
)

// TestContainerdE2E runs the containerd runtime for real against the
// containerd `make up` started, on a machine without GPUs: the image is
// pushed to the local registry and pulled by digest into containerd; each
// probe runs in a fresh container through the init. A GPU image fails with
// "no GPU visible" (exit 4); the same image marked CPU-only passes with the
// GPU checks skipped, carries the runtime proof and is signable. The init's
// fingerprint names the digest containerd ran.
func TestContainerdE2E(t *testing.T) {
	e := testenv.Get(t)
	e.ContainerdSocket(t)
	if _, err := (verify.NVML{}).Probe(context.Background()); !errors.Is(err, verify.ErrNoGPU) {
		t.Skipf("this test expects a machine without GPUs; verify.NVML says %v", err)
	}
	ref, _, l := verifytest.PushedDemo(t, e, "verify-e2e-ctr")
	run := func(l *lock.Lock) (*verify.Result, *Runtime, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		rt, err := New(ref, WithAddress(e.Containerd), WithShmBytes(verify.ShmBytes(l)))
		if err != nil {
			t.Fatal(err)
		}
		res, err := verify.Run(ctx, l, verify.WithImage(ref), verify.WithRuntime(rt))
		return res, rt, err
	}

	t.Run("gpu image fails", func(t *testing.T) {
		res, _, err := run(l)
		if code := exitcode.Code(err); code != exitcode.VerifyFailed {
			if res != nil {
				for _, c := range res.Checks {
					t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
				}
			}
			t.Fatalf("Run() error = %v (code %d), want code %d", err, code, exitcode.VerifyFailed)
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
		// The init recorded the digest containerd told it (a mismatch fails the check).
		if !strings.Contains(c["init.fingerprint"].Detail, "image_digest") {
			t.Errorf("init.fingerprint %q: the fingerprint has no image_digest", c["init.fingerprint"].Detail)
		}
	})

	t.Run("cpu-only image passes, proven by the runtime", func(t *testing.T) {
		cpu := *l
		cpu.Verify.CPUOnly = true
		res, rt, err := run(&cpu)
		if err != nil {
			for _, c := range res.Checks {
				t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
			}
			t.Fatalf("Run() error = %v, want nil", err)
		}
		c := verifytest.Statuses(res)
		if c["gpu.visible"].Status != verify.Skip || c["driver.version"].Status != verify.Skip {
			t.Errorf("gpu.visible %s, driver.version %s, want both skipped", c["gpu.visible"].Status, c["driver.version"].Status)
		}
		if res.Runtime != verify.RuntimeContainerd || res.Proof != verify.ProofRuntime || res.Digest != ref.DigestStr() {
			t.Errorf("result runtime %q proof %q digest %q, want containerd, runtime, %s", res.Runtime, res.Proof, res.Digest, ref.DigestStr())
		}
		if err := res.Signable(ref.DigestStr()); err != nil {
			t.Errorf("Signable() = %v, want nil", err)
		}
		if rt.RanDigest() != ref.DigestStr() || rt.PulledIn() <= 0 {
			t.Errorf("RanDigest() = %q, PullSeconds %v; want %s and a pull time", rt.RanDigest(), rt.PulledIn(), ref.DigestStr())
		}
	})
}
