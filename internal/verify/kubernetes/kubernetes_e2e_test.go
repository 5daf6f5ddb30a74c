package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
	"imagectl/internal/verify/verifytest"
)

// TestKubernetesE2E verifies the demo image (no torch, CPU-only) through a
// real Job on the local cluster: server-side applied, scheduled on the
// kubelet's node, run through the init on containerd's CRI, its log
// evaluated, the kubelet's imageID read back as the proof, the result
// signed and checked with the stock cosign CLI, and everything deleted.
// Then each failure, produced for real, each a distinct error with its
// exit code and nothing left behind: a GPU request no node offers, a
// digest the registry does not have, a pull the private registry refuses
// (401), an RBAC-limited ServiceAccount, a 5 s verify.timeout. Every run
// but the RBAC-limited one acts as the ServiceAccount of
// docs/kubernetes/verifier-rbac.yaml, applied as the docs give it.
func TestKubernetesE2E(t *testing.T) {
	k := testenv.GetKube(t)
	ns := k.Namespace
	e := testenv.Get(t)
	ref, img, l := verifytest.PushedDemo(t, e, "verify-e2e-k8s")
	repo := ref.Context().String()
	cpu := l
	cpu.Verify.CPUOnly = true
	k.ApplyDoc(t, "verifier-rbac.yaml")
	verifier := k.TokenConfig(t, "imagectl-verifier")
	run := func(t *testing.T, l *lock.Lock, ref name.Digest, opts ...Option) (*verify.Result, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		rt, err := New(l, ref, append([]Option{WithConfig(verifier), WithNamespace(ns)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		res, err := verify.Run(ctx, l, verify.WithImage(ref), verify.WithRuntime(rt), verify.WithGPUProber(nil))
		t.Logf("verify.Run() took %.1fs: %v", time.Since(t0).Seconds(), err)
		if left := k.Leftovers(t); len(left) > 0 {
			t.Errorf("left behind in %s: %s", ns, strings.Join(left, ", "))
		}
		return res, err
	}

	t.Run("cpu-only image passes through a Job, proven by the kubelet's imageID, signed", func(t *testing.T) {
		res, err := run(t, cpu, ref)
		if err != nil {
			if res != nil {
				for _, c := range res.Checks {
					t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
				}
			}
			t.Fatalf("verify.Run() error = %v, want nil", err)
		}
		c := verifytest.Statuses(res)
		for _, n := range []string{"python.version", "shm.size", "tmpdir", "init.fingerprint"} {
			if c[n].Status != verify.Pass {
				t.Errorf("check %s = %s (%s), want pass: the probes ran through the init", n, c[n].Status, c[n].Detail)
			}
		}
		if res.Runtime != verify.RuntimeKubernetes || res.Proof != verify.ProofRuntime || res.Digest != ref.DigestStr() {
			t.Errorf("result runtime %q proof %q digest %q, want kubernetes, runtime, %s", res.Runtime, res.Proof, res.Digest, ref.DigestStr())
		}
		p := res.Pod
		if p == nil || p.Node != "127.0.0.1" || p.UID == "" || p.Namespace != ns || !strings.HasSuffix(p.ImageID, "@"+ref.DigestStr()) {
			t.Fatalf("result pod = %+v, want node 127.0.0.1, a UID, namespace %s and an imageID @%s", p, ns, ref.DigestStr())
		}
		if res.Host.Hostname != p.Node {
			t.Errorf("host %q, want the pod's node %q", res.Host.Hostname, p.Node)
		}
		priv, pub, err := sign.GenerateKeyPair(t.TempDir(), []byte("e2e"))
		if err != nil {
			t.Fatal(err)
		}
		if err := verify.Attest(context.Background(), ref, res, sign.WithKey(priv, []byte("e2e"))); err != nil {
			t.Fatalf("verify.Attest() error = %v", err)
		}
		got := verifytest.CosignVerifiedResult(t, e, pub, ref)
		if !got.Passed || got.Digest != ref.DigestStr() || got.Pod == nil || got.Pod.UID != p.UID {
			t.Errorf("cosign-verified predicate: passed %v digest %q pod %+v, want true %s pod UID %s", got.Passed, got.Digest, got.Pod, ref.DigestStr(), p.UID)
		}
	})

	t.Run("a GPU request no node offers", func(t *testing.T) {
		gpu := *cpu
		gpu.Verify.CPUOnly = false
		_, err := run(t, &gpu, ref)
		if !errors.Is(err, ErrNoGPUNode) || exitcode.Code(err) != exitcode.VerifyNotRun || !strings.Contains(err.Error(), "FailedScheduling") {
			t.Fatalf("verify.Run() error = %v (code %d), want ErrNoGPUNode naming the FailedScheduling event, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
	})

	t.Run("a digest the registry does not have", func(t *testing.T) {
		missing, err := name.NewDigest(repo+"@sha256:"+strings.Repeat("0f", 32), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		_, err = run(t, cpu, missing)
		if !errors.Is(err, ErrImagePull) || exitcode.Code(err) != exitcode.VerifyNotRun || !strings.Contains(err.Error(), "ErrImagePull") {
			t.Fatalf("verify.Run() error = %v (code %d), want ErrImagePull naming the kubelet's reason, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
	})

	t.Run("a pull the private registry refuses", func(t *testing.T) {
		priv := testenv.GetPrivate(t)
		pref, err := name.NewDigest(fmt.Sprintf("%s/verify-e2e-k8s/demo@%s", priv.Registry, ref.DigestStr()))
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", priv.DockerConfig)
		acc, err := auth.New(auth.Config{CAFiles: []string{priv.CA}})
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(pref, img, acc.RemoteOptions()...); err != nil {
			t.Fatalf("pushing to the private registry: %v", err)
		}
		// The kubelet has no credentials for it (no imagePullSecrets).
		_, err = run(t, cpu, pref)
		var ae *auth.Error
		if !errors.As(err, &ae) || !errors.Is(err, ErrImagePull) || exitcode.Code(err) != exitcode.AuthFailed {
			t.Fatalf("verify.Run() error = %v (code %d), want an *auth.Error around ErrImagePull, code %d", err, exitcode.Code(err), exitcode.AuthFailed)
		}
	})

	t.Run("an RBAC-limited ServiceAccount", func(t *testing.T) {
		limited := k.LimitedConfig(t)
		_, err := run(t, cpu, ref, WithConfig(limited))
		if !errors.Is(err, ErrForbidden) || exitcode.Code(err) != exitcode.VerifyNotRun || !strings.Contains(err.Error(), "patch jobs") {
			t.Fatalf("verify.Run() error = %v (code %d), want ErrForbidden naming patch jobs, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
	})

	t.Run("a 5 s verify.timeout", func(t *testing.T) {
		slow := *cpu
		slow.Verify.Timeout = initconfig.Duration(5 * time.Second)
		// The claim does not exist: the pod stays Pending past the deadline.
		slow.Runtime.Storage.Path = "/storage"
		t0 := time.Now()
		_, err := run(t, &slow, ref, WithStorageClaim("no-such-claim"))
		if !errors.Is(err, ErrJobDeadline) || exitcode.Code(err) != exitcode.VerifyNotRun {
			t.Fatalf("verify.Run() error = %v (code %d), want ErrJobDeadline, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
		if d := time.Since(t0); d > 90*time.Second {
			t.Errorf("verify.Run() returned after %v: the 5 s deadline plus clean-up should be well under that", d)
		}
	})
}
