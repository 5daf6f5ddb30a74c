package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"

	"imagectl/internal/auth"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
)

// FieldManager is the server-side apply field manager of what imagectl
// applies.
const FieldManager = "imagectl"

// jobContainer is the Job's one container (RenderJob).
const jobContainer = "verify"

// The failures a Kubernetes verification reports (each inside a
// *NotRunError, exit 7; a pull refused with 401 is an *auth.Error, exit 77).
var (
	// ErrNoGPUNode: the pod is Pending, FailedScheduling, and no node offers
	// the GPU resource.
	ErrNoGPUNode = errors.New("no node offers " + string(GPUResource))
	// ErrImagePull: the kubelet could not pull the image.
	ErrImagePull = errors.New("the kubelet could not pull the image")
	// ErrPodKilled: the pod was OOM-killed or evicted.
	ErrPodKilled = errors.New("the verification pod was killed")
	// ErrJobDeadline: the Job did not finish within verify.timeout.
	ErrJobDeadline = errors.New("the verification Job did not finish within verify.timeout")
	// ErrForbidden: RBAC refused one of the calls the driver makes.
	ErrForbidden = errors.New("forbidden by the cluster's RBAC")
)

// PodRun is where the kubelet ran the probes, as the API server reports
// it: the proof of a Kubernetes verification.
type PodRun struct {
	Namespace string `json:"namespace"`
	Job       string `json:"job"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Node      string `json:"node"`
	// ImageID is the container's status.containerStatuses[].imageID: the
	// image the kubelet ran, repo@sha256:... .
	ImageID string `json:"image_id"`
}

// PodRunner is a Runtime that ran the probes in a Kubernetes pod.
type PodRunner interface {
	// RanPod is the pod the probes ran in (nil before it ran).
	RanPod() *PodRun
}

// Kubernetes runs the probes as a Kubernetes Job on a GPU node, driven
// through the API server (client-go): it applies (server-side) the
// ConfigMap and the Job RenderJob makes, with a random suffix so that
// concurrent runs never share objects, watches the pod until it ends or
// the context's deadline (verify.timeout), streams the verify container's
// log (every probe's output, which Exec hands to the evaluation like a
// recorded Job log), reads the pod's UID, node and imageID back from the
// API server (the proof: RanDigest is the digest the kubelet ran), and
// deletes what it applied with foreground propagation, also when the run
// fails or is cancelled, unless Keep.
type Kubernetes struct {
	// Kubeconfig is the kubeconfig file. The default is client-go's:
	// $KUBECONFIG, else ~/.kube/config, else the in-cluster configuration.
	Kubeconfig string
	// Context is the kubeconfig context. The default is its current one.
	Context string
	// Namespace of the Job. The default is the context's namespace, else
	// the in-cluster one, else "default".
	Namespace string
	// Image is the image, by digest, the Job runs.
	Image name.Digest
	// Lock is the image's lock, which shapes the Job (RenderJob).
	Lock *lock.Lock
	// Job shapes the Job further (storage claim, /dev/shm, Python, ...).
	Job JobConfig
	// Keep leaves the Job, its pod and the ConfigMap in place.
	Keep bool
	// Config is a ready client configuration; it overrides Kubeconfig and
	// Context (tests, in-process callers).
	Config *rest.Config

	once    sync.Once
	log     []byte
	err     error
	pod     *PodRun
	cleanMu sync.Mutex
	created []object // what to delete, in order
}

type object struct{ kind, namespace, name string }

// Name implements Runtime.
func (*Kubernetes) Name() string { return RuntimeKubernetes }

// RanDigest implements DigestRunner: the digest in the imageID the
// kubelet reported for the verify container ("" before it ran, or when
// the imageID names no digest).
func (k *Kubernetes) RanDigest() string {
	if k.pod == nil {
		return ""
	}
	_, d, ok := strings.Cut(k.pod.ImageID, "@")
	if !ok || !strings.HasPrefix(d, "sha256:") {
		return ""
	}
	return d
}

// RanPod implements PodRunner.
func (k *Kubernetes) RanPod() *PodRun { return k.pod }

// Exec implements Runtime: the first call runs the Job; every call returns
// its whole log, from which the caller's parser picks the probe's line.
func (k *Kubernetes) Exec(ctx context.Context, p Probe) ([]byte, error) {
	k.once.Do(func() { k.log, k.err = k.run(ctx) })
	if k.err != nil {
		return nil, k.err
	}
	if len(k.log) == 0 {
		return nil, &ProbeError{Probe: p.Name, Err: errors.New("the Job's log is empty")}
	}
	return k.log, nil
}

// Close implements Runtime: it deletes what is left (nothing after a run
// that got as far as its own clean-up).
func (k *Kubernetes) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return k.cleanup(ctx)
}

type clients struct {
	api    kubernetes.Interface // requests with a timeout
	stream kubernetes.Interface // watches and the log stream, bounded by ctx
	ns     string
}

// restConfig loads the client configuration and the namespace.
func (k *Kubernetes) restConfig() (*rest.Config, string, error) {
	if k.Config != nil {
		return rest.CopyConfig(k.Config), firstNonEmpty(k.Namespace, "default"), nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.Kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.Context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", errors.New("no Kubernetes configuration: give --kubeconfig, set $KUBECONFIG, write ~/.kube/config, or run in a pod")
		}
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns := k.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("the kubeconfig's namespace: %w", err)
		}
	}
	return cfg, firstNonEmpty(ns, "default"), nil
}

func (k *Kubernetes) clients() (*clients, error) {
	cfg, ns, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "imagectl"
	stream := rest.CopyConfig(cfg)
	cfg.Timeout = 30 * time.Second
	api, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	st, err := kubernetes.NewForConfig(stream)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &clients{api: api, stream: st, ns: ns}, nil
}

func (k *Kubernetes) notRun(stage string, err error) error {
	return &NotRunError{Stage: "kubernetes " + stage, Err: err}
}

func (k *Kubernetes) run(ctx context.Context) (out []byte, err error) {
	log := logs.From(ctx)
	if k.Lock == nil {
		return nil, k.notRun("job", errors.New("no lock to render the Job from"))
	}
	c, err := k.clients()
	if err != nil {
		return nil, k.notRun("client", err)
	}
	cfg := k.Job
	cfg.Namespace = c.ns
	cm, job, err := RenderJob(k.Lock, k.Image, cfg)
	if err != nil {
		return nil, k.notRun("job", err)
	}
	// A suffix of its own: two runs of one digest never share a Job.
	suffix := randomHex(3)
	job.Name += "-" + suffix
	cm.Name = job.Name + "-probes"
	job.Spec.Template.Spec.Volumes[0].ConfigMap.Name = cm.Name
	defer func() {
		if k.Keep {
			log.Info("kept the verification Job", "namespace", c.ns, "job", job.Name)
			return
		}
		// Clean-up outlives a cancelled or expired ctx.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if cerr := k.cleanupWith(cctx, c); cerr != nil && err == nil {
			err = k.notRun("clean-up", cerr)
		}
	}()

	k.track(object{"configmaps", c.ns, cm.Name})
	if err := k.apply(ctx, c, "configmaps", cm.Name, cm); err != nil {
		return nil, err
	}
	k.track(object{"jobs", c.ns, job.Name})
	if err := k.apply(ctx, c, "jobs", job.Name, job); err != nil {
		return nil, err
	}
	var applied *batchv1.Job
	if err := k.call(ctx, "get", "jobs", func() (err error) {
		applied, err = c.api.BatchV1().Jobs(c.ns).Get(ctx, job.Name, metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	// The ConfigMap goes with the Job, even if this process dies.
	owner := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":%q,"uid":%q}]}}`, applied.Name, applied.UID)
	if err := k.call(ctx, "patch", "configmaps", func() error {
		_, err := c.api.CoreV1().ConfigMaps(c.ns).Patch(ctx, cm.Name, types.MergePatchType, []byte(owner), metav1.PatchOptions{FieldManager: FieldManager})
		return err
	}); err != nil {
		return nil, err
	}
	log.Info("applied the verification Job", "namespace", c.ns, "job", job.Name, "image", k.Image.String())

	sel := "batch.kubernetes.io/controller-uid=" + string(applied.UID)
	pod, err := k.waitPod(ctx, c, sel, started)
	if err != nil {
		return nil, err
	}
	log.Info("verification pod started", "pod", pod.Name, "node", pod.Spec.NodeName)
	var buf bytes.Buffer
	if err := k.streamLog(ctx, c, pod.Name, &buf); err != nil {
		return nil, err
	}
	if pod, err = k.waitPod(ctx, c, sel, finished); err != nil {
		return nil, err
	}
	st := containerStatus(pod)
	k.pod = &PodRun{Namespace: c.ns, Job: job.Name, Name: pod.Name, UID: string(pod.UID), Node: pod.Spec.NodeName}
	if st != nil {
		k.pod.ImageID = st.ImageID
	}
	log.Info("verification pod ended", "pod", pod.Name, "phase", pod.Status.Phase, "image_id", k.pod.ImageID)
	if err := killed(pod); err != nil {
		return nil, k.notRun("pod", err)
	}
	return buf.Bytes(), nil
}

func (k *Kubernetes) track(o object) {
	k.cleanMu.Lock()
	defer k.cleanMu.Unlock()
	k.created = append(k.created, o)
}

// apply server-side applies obj (a typed object with its TypeMeta), with
// the status and the null creation timestamps left out.
func (k *Kubernetes) apply(ctx context.Context, c *clients, resource, objName string, obj runtime.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return k.notRun("apply", err)
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
	body, err := json.Marshal(m)
	if err != nil {
		return k.notRun("apply", err)
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
	return k.call(ctx, "patch", resource, func() error {
		var err error
		switch resource {
		case "configmaps":
			_, err = c.api.CoreV1().ConfigMaps(c.ns).Patch(ctx, objName, types.ApplyPatchType, body, opts)
		case "jobs":
			_, err = c.api.BatchV1().Jobs(c.ns).Patch(ctx, objName, types.ApplyPatchType, body, opts)
		default:
			err = fmt.Errorf("applying %s: not a resource imagectl applies", resource)
		}
		return err
	})
}

// apiBackoff bounds the retries of one API call: 5 tries over ~8 s.
var apiBackoff = wait.Backoff{Steps: 5, Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1}

// transientAPI reports whether an API error is worth a retry: the server
// busy or unavailable, a timeout, a reset or cut connection. 4xx answers
// (forbidden, not found, invalid) are final.
func transientAPI(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || utilnet.IsConnectionRefused(err)
}

// call runs one API call with bounded retries of transient errors; a 403
// becomes ErrForbidden naming the verb and the resource.
func (k *Kubernetes) call(ctx context.Context, verb, resource string, fn func() error) error {
	err := retry.OnError(apiBackoff, func(err error) bool { return ctx.Err() == nil && transientAPI(err) }, fn)
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		return k.notRun("rbac", fmt.Errorf("%w: %s %s: %v", ErrForbidden, verb, resource, err))
	case ctx.Err() != nil:
		return k.ctxErr(ctx, fmt.Sprintf("%s %s", verb, resource), err)
	}
	return k.notRun("api", fmt.Errorf("%s %s: %w", verb, resource, err))
}

// ctxErr is the error of a run whose ctx ended: the deadline (verify.timeout)
// or a cancel.
func (k *Kubernetes) ctxErr(ctx context.Context, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return k.notRun("deadline", fmt.Errorf("%w (%s): %s: %v", ErrJobDeadline, timeoutOf(k.Lock), what, err))
	}
	return k.notRun("cancelled", fmt.Errorf("%s: %w", what, ctx.Err()))
}

func timeoutOf(l *lock.Lock) time.Duration {
	if l != nil && l.Verify.Timeout > 0 {
		return time.Duration(l.Verify.Timeout)
	}
	return DefaultTimeout
}

type podGoal int

const (
	started  podGoal = iota // the verify container runs or ran
	finished                // the pod succeeded or failed
)

// waitPod watches the Job's pod until it reaches goal, and fails early on
// what will never get there: no node offers the GPUs, the image cannot be
// pulled, the pod was evicted or deleted.
func (k *Kubernetes) waitPod(ctx context.Context, c *clients, sel string, goal podGoal) (*corev1.Pod, error) {
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return c.stream.CoreV1().Pods(c.ns).List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return c.stream.CoreV1().Pods(c.ns).Watch(ctx, o)
		},
	}
	var found *corev1.Pod
	var failure error
	last := "no pod yet"
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			failure = k.podDeleted(ctx, c, pod)
			return true, nil
		}
		last = describePod(pod)
		if err := k.stuck(ctx, c, pod); err != nil {
			failure = err
			return true, nil
		}
		if killed(pod) != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			found = pod
			return true, nil
		}
		if goal == started {
			if st := containerStatus(pod); st != nil && (st.State.Running != nil || st.State.Terminated != nil) {
				found = pod
				return true, nil
			}
		}
		return false, nil
	})
	switch {
	case failure != nil:
		return nil, failure
	case err != nil && ctx.Err() != nil:
		return nil, k.ctxErr(ctx, "waiting for the pod", errors.New(last))
	case err != nil && apierrors.IsForbidden(err):
		return nil, k.notRun("rbac", fmt.Errorf("%w: watch pods: %v", ErrForbidden, err))
	case err != nil:
		return nil, k.notRun("watch", fmt.Errorf("watching the Job's pod: %w", err))
	}
	return found, nil
}

// podDeleted is the error of a pod deleted under the run: the Job's
// activeDeadlineSeconds (verify.timeout) or someone else.
func (k *Kubernetes) podDeleted(ctx context.Context, c *clients, pod *corev1.Pod) error {
	name := pod.Labels["batch.kubernetes.io/job-name"]
	if job, err := c.api.BatchV1().Jobs(c.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		for _, cond := range job.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue && cond.Reason == batchv1.JobReasonDeadlineExceeded {
				return k.notRun("deadline", fmt.Errorf("%w (%s): Job %s: %s", ErrJobDeadline, timeoutOf(k.Lock), name, cond.Message))
			}
		}
	}
	return k.notRun("pod", fmt.Errorf("pod %s was deleted before it finished (phase %s)", pod.Name, pod.Status.Phase))
}

func describePod(pod *corev1.Pod) string {
	s := fmt.Sprintf("pod %s is %s", pod.Name, pod.Status.Phase)
	for _, cond := range pod.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && cond.Message != "" {
			s += fmt.Sprintf(" (%s: %s)", cond.Reason, cond.Message)
		}
	}
	if st := containerStatus(pod); st != nil && st.State.Waiting != nil {
		s += fmt.Sprintf(" (container %s waiting: %s)", st.Name, st.State.Waiting.Reason)
	}
	return s
}

func containerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == jobContainer {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// stuck returns the error of a pod that will never run: unschedulable
// while no node offers the GPU resource, or an image the kubelet cannot
// pull.
func (k *Kubernetes) stuck(ctx context.Context, c *clients, pod *corev1.Pod) error {
	for _, cond := range pod.Status.Conditions {
		if cond.Type != corev1.PodScheduled || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable {
			continue
		}
		want, ok := gpuRequest(pod)
		if !ok {
			return nil // wait: a node may free up or join
		}
		if offered, err := k.gpuNodes(ctx, c); err != nil || offered > 0 {
			return nil // some node has the GPUs (busy now), or nodes cannot be listed: wait
		}
		return k.notRun("schedule", fmt.Errorf("%w: pod %s/%s requests %s %s and is Pending: %s", ErrNoGPUNode,
			pod.Namespace, pod.Name, want.String(), GPUResource, k.schedulingEvent(ctx, c, pod, cond.Message)))
	}
	st := containerStatus(pod)
	if st == nil || st.State.Waiting == nil {
		return nil
	}
	w := st.State.Waiting
	switch w.Reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable":
	case "CreateContainerError", "RunContainerError":
		return k.notRun("start", fmt.Errorf("the kubelet could not start container %s of pod %s on node %s: %s: %s", st.Name, pod.Name, pod.Spec.NodeName, w.Reason, w.Message))
	default:
		return nil
	}
	err := k.notRun("pull", fmt.Errorf("%w %s on node %s: %s: %s", ErrImagePull, st.Image, pod.Spec.NodeName, w.Reason, w.Message))
	// The kubelet's message is all the API gives: a registry's 401 shows
	// there as its status text, or as containerd's words for a challenge it
	// had no credentials to answer.
	if pullUnauthorized(w.Message) {
		host := k.Image.RegistryStr()
		return &auth.Error{Kind: "registry", Host: host, Status: http.StatusUnauthorized,
			Source: "the kubelet's (the pod's imagePullSecrets, the node's registry configuration)", Err: err}
	}
	return err
}

// pullUnauthorized reports whether a kubelet's pull message says the
// registry wanted credentials (401) it did not get or did not accept.
func pullUnauthorized(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"401 unauthorized", "unauthorized", "authorization failed", "no basic auth credentials"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func gpuRequest(pod *corev1.Pod) (resource.Quantity, bool) {
	for _, ctr := range pod.Spec.Containers {
		if n, ok := ctr.Resources.Limits[GPUResource]; ok && !n.IsZero() {
			return n, true
		}
	}
	return resource.Quantity{}, false
}

// gpuNodes counts the nodes whose allocatable resources include the GPU
// resource.
func (k *Kubernetes) gpuNodes(ctx context.Context, c *clients) (int, error) {
	var nodes *corev1.NodeList
	err := retry.OnError(apiBackoff, transientAPI, func() (err error) {
		nodes, err = c.api.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err
	})
	if err != nil {
		logs.From(ctx).Warn("listing nodes for their GPUs", "err", err)
		return 0, err
	}
	n := 0
	for _, node := range nodes.Items {
		if q, ok := node.Status.Allocatable[GPUResource]; ok && !q.IsZero() {
			n++
		}
	}
	return n, nil
}

// schedulingEvent names the pod's latest FailedScheduling event, else the
// scheduler's condition message.
func (k *Kubernetes) schedulingEvent(ctx context.Context, c *clients, pod *corev1.Pod, fallback string) string {
	sel := fields.Set{"involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID), "reason": "FailedScheduling"}.AsSelector().String()
	var evs *corev1.EventList
	err := retry.OnError(apiBackoff, transientAPI, func() (err error) {
		evs, err = c.api.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
		return err
	})
	if err != nil || len(evs.Items) == 0 {
		return "FailedScheduling: " + fallback
	}
	ev := evs.Items[len(evs.Items)-1]
	return fmt.Sprintf("event %s %s: %s", ev.Name, ev.Reason, ev.Message)
}

// killed returns why the pod was killed (OOM, eviction), or nil.
func killed(pod *corev1.Pod) error {
	if pod.Status.Reason == "Evicted" {
		return fmt.Errorf("%w: pod %s on node %s was evicted: %s", ErrPodKilled, pod.Name, pod.Spec.NodeName, pod.Status.Message)
	}
	if st := containerStatus(pod); st != nil && st.State.Terminated != nil && st.State.Terminated.Reason == "OOMKilled" {
		return fmt.Errorf("%w: container %s of pod %s on node %s was OOM-killed (exit %d; its memory limit or the node's memory)",
			ErrPodKilled, st.Name, pod.Name, pod.Spec.NodeName, st.State.Terminated.ExitCode)
	}
	return nil
}

// maxLog bounds the log read back (the probes print a few KiB).
const maxLog = 64 << 20

// streamLog follows the verify container's log until it ends.
func (k *Kubernetes) streamLog(ctx context.Context, c *clients, pod string, w io.Writer) error {
	limit := int64(maxLog)
	return k.call(ctx, "get", "pods/log", func() error {
		if b, ok := w.(*bytes.Buffer); ok {
			b.Reset() // a retry reads the log from its start again
		}
		rc, err := c.stream.CoreV1().Pods(c.ns).GetLogs(pod, &corev1.PodLogOptions{Container: jobContainer, Follow: true, LimitBytes: &limit}).Stream(ctx)
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(w, rc)
		return err
	})
}

// cleanup deletes what run applied (Job first, foreground: its pods go
// before it; then the ConfigMap) and waits until they are gone.
func (k *Kubernetes) cleanup(ctx context.Context) error {
	k.cleanMu.Lock()
	n := len(k.created)
	k.cleanMu.Unlock()
	if n == 0 || k.Keep {
		return nil
	}
	c, err := k.clients()
	if err != nil {
		return err
	}
	return k.cleanupWith(ctx, c)
}

func (k *Kubernetes) cleanupWith(ctx context.Context, c *clients) error {
	k.cleanMu.Lock()
	objs := k.created
	k.created = nil
	k.cleanMu.Unlock()
	fg := metav1.DeletePropagationForeground
	var errs []error
	// Jobs first: the ConfigMap is mounted by the Job's pod.
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		del := func() error {
			switch o.kind {
			case "jobs":
				return c.api.BatchV1().Jobs(o.namespace).Delete(ctx, o.name, metav1.DeleteOptions{PropagationPolicy: &fg})
			default:
				return c.api.CoreV1().ConfigMaps(o.namespace).Delete(ctx, o.name, metav1.DeleteOptions{PropagationPolicy: &fg})
			}
		}
		err := retry.OnError(apiBackoff, transientAPI, del)
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", o.kind, o.namespace, o.name, err))
			continue
		}
		// Gone means gone: foreground deletion keeps the Job until its pods are.
		err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			var err error
			switch o.kind {
			case "jobs":
				_, err = c.api.BatchV1().Jobs(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
			default:
				_, err = c.api.CoreV1().ConfigMaps(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
			}
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil && !transientAPI(err) {
				return false, err
			}
			return false, nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("waiting for %s %s/%s to be deleted: %w", o.kind, o.namespace, o.name, err))
		}
	}
	return errors.Join(errs...)
}
