package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
	iruntime "imagectl/internal/runtime"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
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
	ref, img, l := pushedDemo(t, e, "verify-e2e-k8s")
	repo := ref.Context().String()
	cpu := l
	cpu.Verify.CPUOnly = true
	k.ApplyDoc(t, "verifier-rbac.yaml")
	verifier := k.TokenConfig(t, "imagectl-verifier")
	run := func(t *testing.T, l *lock.Lock, ref name.Digest, rt *Kubernetes) (*Result, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		if rt.Config == nil {
			rt.Config = verifier
		}
		rt.Namespace, rt.Image, rt.Lock = ns, ref, l
		t0 := time.Now()
		res, err := Run(ctx, l, WithImage(ref), WithRuntime(rt), WithGPUProber(nil))
		t.Logf("Run() took %.1fs: %v", time.Since(t0).Seconds(), err)
		if left := k.Leftovers(t); len(left) > 0 {
			t.Errorf("left behind in %s: %s", ns, strings.Join(left, ", "))
		}
		return res, err
	}

	t.Run("cpu-only image passes through a Job, proven by the kubelet's imageID, signed", func(t *testing.T) {
		rt := &Kubernetes{}
		res, err := run(t, cpu, ref, rt)
		if err != nil {
			if res != nil {
				for _, c := range res.Checks {
					t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
				}
			}
			t.Fatalf("Run() error = %v, want nil", err)
		}
		c := statuses(res)
		for _, n := range []string{"python.version", "shm.size", "tmpdir", "init.fingerprint"} {
			if c[n].Status != Pass {
				t.Errorf("check %s = %s (%s), want pass: the probes ran through the init", n, c[n].Status, c[n].Detail)
			}
		}
		if res.Runtime != RuntimeKubernetes || res.Proof != ProofRuntime || res.Digest != ref.DigestStr() {
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
		if err := Attest(context.Background(), ref, res, sign.WithKey(priv, []byte("e2e"))); err != nil {
			t.Fatalf("Attest() error = %v", err)
		}
		got := cosignVerifiedResult(t, e, pub, ref)
		if !got.Passed || got.Digest != ref.DigestStr() || got.Pod == nil || got.Pod.UID != p.UID {
			t.Errorf("cosign-verified predicate: passed %v digest %q pod %+v, want true %s pod UID %s", got.Passed, got.Digest, got.Pod, ref.DigestStr(), p.UID)
		}
	})

	t.Run("a GPU request no node offers", func(t *testing.T) {
		gpu := *cpu
		gpu.Verify.CPUOnly = false
		_, err := run(t, &gpu, ref, &Kubernetes{})
		if !errors.Is(err, ErrNoGPUNode) || exitcode.Code(err) != exitcode.VerifyNotRun || !strings.Contains(err.Error(), "FailedScheduling") {
			t.Fatalf("Run() error = %v (code %d), want ErrNoGPUNode naming the FailedScheduling event, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
	})

	t.Run("a digest the registry does not have", func(t *testing.T) {
		missing, err := name.NewDigest(repo+"@sha256:"+strings.Repeat("0f", 32), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		_, err = run(t, cpu, missing, &Kubernetes{})
		if !errors.Is(err, ErrImagePull) || exitcode.Code(err) != exitcode.VerifyNotRun || !strings.Contains(err.Error(), "ErrImagePull") {
			t.Fatalf("Run() error = %v (code %d), want ErrImagePull naming the kubelet's reason, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
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
		_, err = run(t, cpu, pref, &Kubernetes{})
		var ae *auth.Error
		if !errors.As(err, &ae) || !errors.Is(err, ErrImagePull) || exitcode.Code(err) != exitcode.AuthFailed {
			t.Fatalf("Run() error = %v (code %d), want an *auth.Error around ErrImagePull, code %d", err, exitcode.Code(err), exitcode.AuthFailed)
		}
	})

	t.Run("an RBAC-limited ServiceAccount", func(t *testing.T) {
		limited := k.LimitedConfig(t)
		_, err := run(t, cpu, ref, &Kubernetes{Config: limited})
		if !errors.Is(err, ErrForbidden) || exitcode.Code(err) != exitcode.VerifyNotRun || !strings.Contains(err.Error(), "patch jobs") {
			t.Fatalf("Run() error = %v (code %d), want ErrForbidden naming patch jobs, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
	})

	t.Run("a 5 s verify.timeout", func(t *testing.T) {
		slow := *cpu
		slow.Verify.Timeout = initconfig.Duration(5 * time.Second)
		// The claim does not exist: the pod stays Pending past the deadline.
		slow.Runtime.Storage.Path = "/storage"
		t0 := time.Now()
		_, err := run(t, &slow, ref, &Kubernetes{Job: JobConfig{StorageClaim: "no-such-claim"}})
		if !errors.Is(err, ErrJobDeadline) || exitcode.Code(err) != exitcode.VerifyNotRun {
			t.Fatalf("Run() error = %v (code %d), want ErrJobDeadline, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
		}
		if d := time.Since(t0); d > 90*time.Second {
			t.Errorf("Run() returned after %v: the 5 s deadline plus clean-up should be well under that", d)
		}
	})
}

// pushedDemo builds the demo image (e2eImage: the init, a baked runtime
// config, python3, no torch) and pushes it to a fresh repository of the
// local registry; it returns the pushed digest, the image and its lock.
func pushedDemo(t testing.TB, e testenv.Env, prefix string) (name.Digest, v1.Image, *lock.Lock) {
	t.Helper()
	rc := iruntime.Config{
		MinShmBytes:     256 << 20,
		TmpDir:          "/tmp/imagectl-tmp",
		DriverFloor:     "525.60.13",
		DriverPolicy:    "warn",
		FingerprintPath: "/tmp/imagectl-fingerprint.json",
	}
	_, local, img := e2eImage(t, e, rc)
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

// cosignVerifiedResult checks the verification attestation on ref with the
// stock cosign CLI and returns its predicate.
func cosignVerifiedResult(t *testing.T, e testenv.Env, pub string, ref name.Digest) Result {
	t.Helper()
	cmd := exec.Command(filepath.Join(e.Bin, "cosign"), "verify-attestation", "--key", pub, "--insecure-ignore-tlog",
		"--allow-insecure-registry", "--type", PredicateType, ref.String())
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
		Predicate Result `json:"predicate"`
	}
	if err := json.Unmarshal(env.Payload, &st); err != nil {
		t.Fatal(err)
	}
	return st.Predicate
}
