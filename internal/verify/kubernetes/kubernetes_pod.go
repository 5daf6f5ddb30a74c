package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"

	"imagectl/internal/auth"
	"imagectl/internal/logs"
)

// The pod side of a Kubernetes verification: waiting for the pod, telling
// why it did not run (scheduling, image pull, OOM, eviction), and its log.

type podGoal int

const (
	started  podGoal = iota // the verify container runs or ran
	finished                // the pod succeeded or failed
)

// waitPod watches the Job's pod until it reaches goal, and fails early on
// what will never get there: no node offers the GPUs, the image cannot be
// pulled, the pod was evicted or deleted.
func (k *Runtime) waitPod(ctx context.Context, c *clients, sel string, goal podGoal) (*corev1.Pod, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return c.stream.CoreV1().Pods(c.ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
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
// activeDeadlineSeconds (verify.timeout) or someone else. The Job
// controller marks the Job FailureTarget (then Failed) with reason
// DeadlineExceeded around the time it deletes the pod, so the Job is read
// again for a few seconds before the deletion is blamed on someone else.
func (k *Runtime) podDeleted(ctx context.Context, c *clients, pod *corev1.Pod) error {
	name := pod.Labels["batch.kubernetes.io/job-name"]
	deleted := fmt.Errorf("pod %s was deleted before it finished (phase %s)", pod.Name, pod.Status.Phase)
	// ctx's deadline is verify.timeout too, set just before the Job was
	// applied: when it has passed (or passes while the Job is read), the
	// deletion is that deadline's, whichever clock saw it first.
	if ctx.Err() != nil {
		return k.ctxErr(ctx, "Job "+name, deleted)
	}
	for try := 0; try < 10; try++ {
		job, err := c.api.BatchV1().Jobs(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return k.ctxErr(ctx, "Job "+name, deleted)
			}
			break
		}
		for _, cond := range job.Status.Conditions {
			terminal := cond.Type == batchv1.JobFailed || cond.Type == batchv1.JobFailureTarget
			if terminal && cond.Status == corev1.ConditionTrue && cond.Reason == batchv1.JobReasonDeadlineExceeded {
				return k.notRun("deadline", fmt.Errorf("%w (%s): Job %s: %s", ErrJobDeadline, timeoutOf(k.lock), name, cond.Message))
			}
		}
		select {
		case <-ctx.Done():
			return k.ctxErr(ctx, "Job "+name, deleted)
		case <-time.After(500 * time.Millisecond):
		}
	}
	return k.notRun("pod", deleted)
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
func (k *Runtime) stuck(ctx context.Context, c *clients, pod *corev1.Pod) error {
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
		host := k.image.RegistryStr()
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
func (k *Runtime) gpuNodes(ctx context.Context, c *clients) (int, error) {
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
func (k *Runtime) schedulingEvent(ctx context.Context, c *clients, pod *corev1.Pod, fallback string) string {
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
func (k *Runtime) streamLog(ctx context.Context, c *clients, pod string, w io.Writer) error {
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
