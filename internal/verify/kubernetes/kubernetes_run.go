package kubernetes

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/verify"
)

// FieldManager is the server-side apply field manager of what imagectl
// applies.
const FieldManager = "imagectl"

// jobContainer is the Job's one container (RenderJob).
const jobContainer = "verify"

// The failures a Kubernetes verification reports (each inside a
// *verify.NotRunError, exit 7; a pull refused with 401 is an *auth.Error, exit 77).
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

// Runtime runs the probes as a Kubernetes Job on a GPU node, driven
// through the API server (client-go): it applies (server-side) the
// ConfigMap and the Job RenderJob makes, with a random suffix so that
// concurrent runs never share objects, watches the pod until it ends or
// the context's deadline (verify.timeout), streams the verify container's
// log (every probe's output: RunBatch's), reads the pod's UID, node and
// imageID back from the API server (the proof: RanDigest is the digest the
// kubelet ran), and deletes what it applied with foreground propagation,
// also when the run fails or is cancelled, unless WithKeep. It is a
// verify.BatchRuntime: one Job runs the whole probe set.
type Runtime struct {
	o     options
	image name.Digest
	lock  *lock.Lock

	pod     *verify.PodRun
	cleanMu sync.Mutex
	created []object // what to delete, in order
}

// New returns the runtime that verifies image ref, by digest, built from
// lock l (which shapes the Job: RenderJob), in a Job on the cluster opts
// point at.
func New(l *lock.Lock, ref name.Digest, opts ...Option) (*Runtime, error) {
	if l == nil {
		return nil, errors.New("kubernetes runtime: no lock to render the Job from")
	}
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return &Runtime{o: *o, image: ref, lock: l}, nil
}

type object struct{ kind, namespace, name string }

// Name implements verify.Runtime.
func (*Runtime) Name() string { return verify.RuntimeKubernetes }

// RanDigest implements verify.DigestRunner: the digest in the imageID the
// kubelet reported for the verify container ("" before it ran, or when
// the imageID names no digest).
func (k *Runtime) RanDigest() string {
	if k.pod == nil {
		return ""
	}
	_, d, ok := strings.Cut(k.pod.ImageID, "@")
	if !ok || !strings.HasPrefix(d, "sha256:") {
		return ""
	}
	return d
}

// RanPod implements verify.PodRunner.
func (k *Runtime) RanPod() *verify.PodRun { return k.pod }

// RunBatch implements verify.BatchRuntime: it runs the Job and returns
// its log, every probe's output.
func (k *Runtime) RunBatch(ctx context.Context) ([]byte, error) {
	return k.run(ctx)
}

// Close implements verify.Runtime: it deletes what is left (nothing after a run
// that got as far as its own clean-up).
func (k *Runtime) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return k.cleanup(ctx)
}

type clients struct {
	api    k8s.Interface // requests with a timeout
	stream k8s.Interface // watches and the log stream, bounded by ctx
	ns     string
}

// restConfig loads the client configuration and the namespace.
func (k *Runtime) restConfig() (*rest.Config, string, error) {
	if k.o.config != nil {
		return rest.CopyConfig(k.o.config), cmp.Or(k.o.namespace, "default"), nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.o.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.o.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", errors.New("no Kubernetes configuration: give --kubeconfig, set $KUBECONFIG, write ~/.kube/config, or run in a pod")
		}
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns := k.o.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, "", fmt.Errorf("the kubeconfig's namespace: %w", err)
		}
	}
	return cfg, cmp.Or(ns, "default"), nil
}

func (k *Runtime) clients() (*clients, error) {
	cfg, ns, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "imagectl"
	stream := rest.CopyConfig(cfg)
	cfg.Timeout = 30 * time.Second
	api, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	st, err := k8s.NewForConfig(stream)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &clients{api: api, stream: st, ns: ns}, nil
}

func (k *Runtime) notRun(stage string, err error) error {
	return &verify.NotRunError{Stage: "kubernetes " + stage, Err: err}
}

func (k *Runtime) run(ctx context.Context) (out []byte, err error) {
	log := logs.From(ctx)
	c, err := k.clients()
	if err != nil {
		return nil, k.notRun("client", err)
	}
	cfg := k.o.job
	cfg.Namespace = c.ns
	cm, job, err := RenderJob(k.lock, k.image, cfg)
	if err != nil {
		return nil, k.notRun("job", err)
	}
	// A suffix of its own: two runs of one digest never share a Job.
	suffix := verify.RandomHex(3)
	job.Name += "-" + suffix
	cm.Name = job.Name + "-probes"
	job.Spec.Template.Spec.Volumes[0].ConfigMap.Name = cm.Name
	defer func() {
		if k.o.keep {
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
	log.Info("applied the verification Job", "namespace", c.ns, "job", job.Name, "image", k.image.String())

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
	k.pod = &verify.PodRun{Namespace: c.ns, Job: job.Name, Name: pod.Name, UID: string(pod.UID), Node: pod.Spec.NodeName}
	if st != nil {
		k.pod.ImageID = st.ImageID
	}
	log.Info("verification pod ended", "pod", pod.Name, "phase", pod.Status.Phase, "image_id", k.pod.ImageID)
	if err := killed(pod); err != nil {
		return nil, k.notRun("pod", err)
	}
	return buf.Bytes(), nil
}

func (k *Runtime) track(o object) {
	k.cleanMu.Lock()
	defer k.cleanMu.Unlock()
	k.created = append(k.created, o)
}

// apply server-side applies obj (a typed object with its TypeMeta), with
// the status and the null creation timestamps left out.
func (k *Runtime) apply(ctx context.Context, c *clients, resource, objName string, obj runtime.Object) error {
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
func (k *Runtime) call(ctx context.Context, verb, resource string, fn func() error) error {
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
func (k *Runtime) ctxErr(ctx context.Context, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return k.notRun("deadline", fmt.Errorf("%w (%s): %s: %v", ErrJobDeadline, timeoutOf(k.lock), what, err))
	}
	return k.notRun("cancelled", fmt.Errorf("%s: %w", what, ctx.Err()))
}

func timeoutOf(l *lock.Lock) time.Duration {
	if l != nil && l.Verify.Timeout > 0 {
		return time.Duration(l.Verify.Timeout)
	}
	return verify.DefaultTimeout
}

// cleanup deletes what run applied (Job first, foreground: its pods go
// before it; then the ConfigMap) and waits until they are gone.
func (k *Runtime) cleanup(ctx context.Context) error {
	k.cleanMu.Lock()
	n := len(k.created)
	k.cleanMu.Unlock()
	if n == 0 || k.o.keep {
		return nil
	}
	c, err := k.clients()
	if err != nil {
		return err
	}
	return k.cleanupWith(ctx, c)
}

func (k *Runtime) cleanupWith(ctx context.Context, c *clients) error {
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
