package release

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"imagectl/internal/exitcode"
	"imagectl/internal/releasefile"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

// TestReleaseKubernetesCLIEndToEnd releases two images (the demo spec as a
// two-flavour matrix) through bin/imagectl with --verify-runtime kubernetes
// --jobs 2 on the local cluster (make up K8S=1), as the ServiceAccount and
// with the storage claim of docs/kubernetes/*.yaml, applied as the docs give
// them:
//   - first with a kubeconfig whose ServiceAccount may touch ConfigMaps
//     only: both images stop at verify with exit 7 naming "patch jobs",
//     nothing is promoted and nothing is left in the namespace;
//   - then as the verifier: each image's verification runs as a Job, and
//     the two Jobs' pods exist at the same time (the claim is bound, so
//     that they can run, only once the test has seen both); each result's
//     proof is the kubelet's imageID of the verified digest, with the
//     pod's UID and node as the test watched them; the results are signed
//     by the verifier key; release promotes with --require-container-runtime
//     and `imagectl promote` accepts the promoted releases again; nothing is
//     left in the namespace.
func TestReleaseKubernetesCLIEndToEnd(t *testing.T) {
	k := testenv.GetKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dr := newDemoRelease(t, ctx, "e2e-k8s", 1<<20)
	bin := filepath.Join(dr.env.Bin, "imagectl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (make build)", bin, err)
	}
	specPath, repos := writeMatrixSpec(t, dr)
	k.ApplyDoc(t, "verifier-rbac.yaml")
	k.ApplyDoc(t, "verify-storage.yaml")
	const claim = "verify-cache" // docs/kubernetes/verify-storage.yaml
	verifierKC := k.WriteKubeconfig(t, k.TokenConfig(t, "imagectl-verifier"), "imagectl-verifier")
	limitedKC := k.WriteKubeconfig(t, k.LimitedConfig(t), "limited")
	s := &scanRelease{dr: dr, bin: bin}
	release := func(kubeconfig string) ([]releaseRow, string, int) {
		t.Helper()
		t0 := time.Now()
		out, errs, code := s.imagectl(t, ctx, "release", specPath, "--images-dir", dr.images, "--lock-missing",
			"--addr", dr.env.BuildkitHost, "--init", filepath.Join(dr.env.Bin, "imagectl-init"),
			"--key", dr.keys.signKey, "--verifier-key", dr.keys.verKey, "--jobs", "2",
			"--verify-runtime", "kubernetes", "--kubeconfig", kubeconfig, "--namespace", k.Namespace, "--storage-claim", claim,
			"--require-container-runtime", "--month", "2026-12", "--progress", "quiet", "-o", "json",
			"--var", "registry="+dr.env.Registry, "--var", "wheel_index="+dr.index.URL)
		t.Logf("release with %s: exit %d after %.1fs", filepath.Base(kubeconfig), code, time.Since(t0).Seconds())
		var rows []releaseRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != len(repos) {
			t.Fatalf("release -o json: %d rows, %v; want %d\nstdout:\n%s\nstderr:\n%s", len(rows), err, len(repos), out, errs)
		}
		if left := k.Leftovers(t); len(left) > 0 {
			t.Errorf("left behind in %s: %s", k.Namespace, strings.Join(left, ", "))
		}
		return rows, errs, code
	}

	// 1. RBAC refuses the Job: exit 7 naming the verb and resource, nothing
	// promoted, nothing left.
	rows, errs, code := release(limitedKC)
	if code != exitcode.VerifyNotRun || !strings.Contains(errs, "patch jobs") || !strings.Contains(errs, "forbidden") {
		t.Errorf("release as a ServiceAccount without jobs: exit %d, want %d naming the forbidden \"patch jobs\":\n%s", code, exitcode.VerifyNotRun, errs)
	}
	for _, r := range rows {
		if r.FailedStage != StageVerify || !strings.Contains(r.Error, "patch jobs") || r.Reference != "" {
			t.Errorf("%s: stopped at %q (%s), promoted %q; want it stopped at verify naming patch jobs, nothing promoted", r.Image, r.FailedStage, r.Error, r.Reference)
		}
		if _, err := os.Stat(filepath.Join(dr.images, r.Image, releasefile.FileName)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a release refused at verify wrote its release file (%v)", r.Image, err)
		}
	}
	for _, repo := range repos {
		if tags, err := remote.List(mustRepo(t, repo)); err == nil && len(tags) > 0 {
			t.Errorf("a release refused at verify tagged %s: %v", repo, tags)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// 2. As the verifier: both Jobs at once, proven, signed, promoted.
	w := watchPods(ctx, t, k, func() error { return bindClaim(ctx, t, k, claim) })
	rows, errs, code = release(verifierKC)
	w.stop()
	if code != 0 {
		t.Fatalf("release as the verifier: exit %d, want 0\n%s", code, errs)
	}
	t.Logf("verification pods of two Jobs seen at once: %v", w.together)
	if len(w.together) != 2 {
		t.Errorf("the verification pods of two Jobs never existed at once (seen: %v)", w.pods)
	}
	digests := map[string]bool{}
	for _, r := range rows {
		digests[r.Digest] = true
		res, p := r.Verify, (*verify.PodRun)(nil)
		if res != nil {
			p = res.Pod
		}
		if r.Reference == "" || res == nil || !res.Passed || res.Digest != r.Digest || res.Runtime != verify.RuntimeKubernetes || res.Proof != verify.ProofRuntime || p == nil {
			t.Errorf("%s: promoted %q, result %+v; want promoted, passed for %s by the kubernetes runtime with a runtime proof and a pod", r.Image, r.Reference, res, r.Digest)
			continue
		}
		if !strings.HasSuffix(p.ImageID, "@"+r.Digest) || p.Node != "127.0.0.1" || p.UID == "" || p.Namespace != k.Namespace {
			t.Errorf("%s: pod %+v; want the kubelet's imageID @%s, node 127.0.0.1, a UID, namespace %s", r.Image, p, r.Digest, k.Namespace)
		}
		seen, ok := w.pods[p.UID]
		if !ok || seen.job != p.Job || seen.imageID != p.ImageID || seen.node != p.Node || seen.image != r.Ref {
			t.Errorf("%s: result pod %+v; the test watched %+v (ok %v), want the same Job, node and imageID, running %s", r.Image, p, seen, ok, r.Ref)
		}
		if !slices.Contains(w.together, p.Job) {
			t.Errorf("%s: Job %s is not one of the two seen at once (%v)", r.Image, p.Job, w.together)
		}
		t.Logf("%s: %s verified by pod %s (uid %s) on node %s, imageID %s", r.Image, r.Digest, p.Name, p.UID, p.Node, p.ImageID)
		checkVerifierSigned(ctx, t, r.Ref, p.UID, dr.keys)
	}
	if len(digests) != len(repos) {
		t.Errorf("digests %v: want %d distinct images", digests, len(repos))
	}

	// The promotion gates again, as a separate promote reads them.
	out, perrs, pcode := s.imagectl(t, ctx, "promote", dr.images, "--key", dr.keys.signPub, "--verifier-key", dr.keys.verPub,
		"--require-container-runtime", "-o", "json")
	if pcode != 0 {
		t.Errorf("promote --require-container-runtime: exit %d, want 0\n%s\n%s", pcode, out, perrs)
	}
}

// releaseRow is what the test reads of a release -o json row.
type releaseRow struct {
	Image       string         `json:"image"`
	Ref         string         `json:"ref"`
	Digest      string         `json:"digest"`
	Verify      *verify.Result `json:"verify"`
	Reference   string         `json:"reference"`
	FailedStage string         `json:"failed_stage"`
	Error       string         `json:"error"`
}

// writeMatrixSpec writes specs/demo.hcl as a matrix of two images,
// demo-a and demo-b (a label tells them apart), with repositories of
// dr's run, and returns its path and the release repositories. Their
// fingerprint goes to /tmp, off the storage: the two Jobs share the one
// claim, where each init would overwrite the other's (docs/scale-out.md).
func writeMatrixSpec(t *testing.T, dr *demoRelease) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dr.env.Root, "specs", "demo.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimSuffix(strings.TrimPrefix(dr.imgs[0].Repos.Release, dr.env.Registry+"/"), "/demo")
	src := string(b)
	for old, repl := range map[string]string{
		`image "demo" {`: `image "demo" {
  matrix = { flavour = ["a", "b"] }
  name   = "demo-${flavour}"`,
		`"org.opencontainers.image.title" = "imagectl demo"`: `"org.opencontainers.image.title" = "imagectl demo"
    "dev.imagectl.test.flavour"      = flavour`,
		`staging = "${var.registry}/imagectl/staging/demo"`:        `staging = "${var.registry}/` + prefix + `/staging/demo-${flavour}"`,
		`release = "${var.registry}/imagectl/demo"`:                `release = "${var.registry}/` + prefix + `/demo-${flavour}"`,
		`fingerprint_path = "/storage/.imagectl/fingerprint.json"`: `fingerprint_path = "/tmp/imagectl/fingerprint.json"`,
	} {
		if !strings.Contains(src, old) {
			t.Fatalf("specs/demo.hcl: %q is not where the test rewrites it", old)
		}
		src = strings.Replace(src, old, repl, 1)
	}
	path := filepath.Join(t.TempDir(), "demo-matrix.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, []string{dr.env.Registry + "/" + prefix + "/demo-a", dr.env.Registry + "/" + prefix + "/demo-b"}
}

func mustRepo(t *testing.T, repo string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bindClaim makes the storage behind claim: a hostPath PersistentVolume of
// the claim's class and size, bound to it, holding the ready file the
// demo's runtime.storage waits for (as the platform's storage would).
func bindClaim(ctx context.Context, t *testing.T, k testenv.Kube, claim string) error {
	pvc, err := k.Client.CoreV1().PersistentVolumeClaims(k.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return err
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".ready"), nil, 0o644); err != nil {
		return err
	}
	dirType := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: k.Namespace + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			StorageClassName:              *pvc.Spec.StorageClassName,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: k.Namespace, Name: claim, UID: pvc.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}},
		},
	}
	if _, err := k.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	t.Cleanup(func() {
		_ = k.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	return nil
}

// podWatch records the verification pods of a namespace as the API server
// reports them.
type podWatch struct {
	mu       sync.Mutex
	pods     map[string]seenPod // by UID, as last seen
	together []string           // the Jobs of the first two pods seen at once
	stop     func()
}

type seenPod struct{ job, node, imageID, image string }

// watchPods watches the namespace's verification pods until stop; once
// pods of two Jobs exist at the same time it calls hold (once). If that
// never happens within 3 minutes of the first pod, it calls hold anyway,
// so that a run gone wrong ends.
func watchPods(ctx context.Context, t *testing.T, k testenv.Kube, hold func() error) *podWatch {
	t.Helper()
	w := &podWatch{pods: map[string]seenPod{}}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.stop = func() { cancel(); <-done }
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = testenv.VerifyLabel
			return k.Client.CoreV1().Pods(k.Namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = testenv.VerifyLabel
			return k.Client.CoreV1().Pods(k.Namespace).Watch(ctx, o)
		},
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			if err := hold(); err != nil {
				t.Errorf("binding the storage claim: %v", err)
			}
		})
	}
	var late *time.Timer
	live := map[string]string{} // UID -> Job, of pods not deleted
	go func() {
		defer close(done)
		_, _ = watchtools.UntilWithSync(wctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				return false, nil
			}
			if late == nil {
				late = time.AfterFunc(3*time.Minute, release)
			}
			uid := string(pod.UID)
			w.mu.Lock()
			defer w.mu.Unlock()
			s := w.pods[uid]
			s.job, s.image, s.node = pod.Labels["batch.kubernetes.io/job-name"], pod.Spec.Containers[0].Image, pod.Spec.NodeName
			for _, st := range pod.Status.ContainerStatuses {
				if st.Name == "verify" && st.ImageID != "" {
					s.imageID = st.ImageID
				}
			}
			w.pods[uid] = s
			if ev.Type == watch.Deleted {
				delete(live, uid)
				return false, nil
			}
			live[uid] = s.job
			jobs := map[string]bool{}
			for _, j := range live {
				jobs[j] = true
			}
			if w.together == nil && len(jobs) >= 2 {
				for j := range jobs {
					w.together = append(w.together, j)
				}
				slices.Sort(w.together)
				release()
			}
			return false, nil
		})
		if late != nil {
			late.Stop()
		}
		once.Do(func() {}) // waits for a hold the timer started
	}()
	return w
}

// checkVerifierSigned: ref carries a verification attestation, signed by
// the verifier key, for the pod uid; the signing key verifies none.
func checkVerifierSigned(ctx context.Context, t *testing.T, ref, uid string, keys e2eKeys) {
	t.Helper()
	d, err := name.NewDigest(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	byKey := func(pub string) []verify.Result {
		preds, err := sign.Attestations(ctx, d, pub)
		if err != nil {
			t.Fatalf("attestations of %s under %s: %v", d, pub, err)
		}
		var out []verify.Result
		for _, p := range preds[sign.VerificationPredicateType] {
			var r verify.Result
			if err := json.Unmarshal(p, &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	found := false
	for _, r := range byKey(keys.verPub) {
		found = found || (r.Passed && r.Pod != nil && r.Pod.UID == uid)
	}
	if !found {
		t.Errorf("%s: no passing verification for pod %s signed by the verifier key", ref, uid)
	}
	if n := len(byKey(keys.signPub)); n > 0 {
		t.Errorf("%s: %d verification(s) verify under the signing key; want only the verifier's", ref, n)
	}
}
