package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/verify"
	"imagectl/internal/verify/verifytest"
)

func TestKubernetesRanDigest(t *testing.T) {
	d := "sha256:" + "ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"[:64]
	for _, tc := range []struct {
		imageID, want string
	}{
		{"127.0.0.1:5000/team/demo@" + d, d},
		{"docker.io/library/x@" + d, d},
		{d, ""}, // a config digest (no repo digest): names no manifest
		{"", ""},
		{"repo@md5:abc", ""},
	} {
		k := &Runtime{pod: &verify.PodRun{ImageID: tc.imageID}}
		if got := k.RanDigest(); got != tc.want {
			t.Errorf("RanDigest(imageID %q) = %q, want %q", tc.imageID, got, tc.want)
		}
	}
	if got := (&Runtime{}).RanDigest(); got != "" {
		t.Errorf("RanDigest() before a run = %q, want empty", got)
	}
}

func podWith(st corev1.ContainerState, reason string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Spec.NodeName, p.Status.Reason = "p", "n1", reason
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: jobContainer, Image: "r/x@sha256:00", State: st}}
	return p
}

func TestKilled(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"oom", podWith(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}, ""), true},
		{"evicted", podWith(corev1.ContainerState{}, "Evicted"), true},
		{"exit 3", podWith(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 3}}, ""), false},
		{"completed", podWith(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}, ""), false},
	} {
		err := killed(tc.pod)
		if got := errors.Is(err, ErrPodKilled); got != tc.want {
			t.Errorf("killed(%s) = %v, want ErrPodKilled %v", tc.name, err, tc.want)
		}
	}
}

func TestStuckPull(t *testing.T) {
	k := &Runtime{image: verifytest.Ref}
	waiting := func(reason, msg string) *corev1.Pod {
		return podWith(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}, "")
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		code int // 0: not stuck
	}{
		{"creating", waiting("ContainerCreating", ""), 0},
		{"not found", waiting("ErrImagePull", `failed to pull and unpack image "r/x@sha256:00": not found`), exitcode.VerifyNotRun},
		{"back-off", waiting("ImagePullBackOff", `Back-off pulling image "r/x@sha256:00"`), exitcode.VerifyNotRun},
		{"401", waiting("ErrImagePull", `failed to resolve reference: unexpected status from HEAD request: 401 Unauthorized`), exitcode.AuthFailed},
		{"basic auth without credentials", waiting("ErrImagePull", `failed to pull and unpack image "r/x@sha256:00": failed to resolve image: authorization failed: no basic auth credentials`), exitcode.AuthFailed},
	} {
		err := k.stuck(context.Background(), nil, tc.pod)
		if tc.code == 0 {
			if err != nil {
				t.Errorf("stuck(%s) = %v, want nil", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrImagePull) || exitcode.Code(err) != tc.code {
			t.Errorf("stuck(%s) = %v (code %d), want ErrImagePull with code %d", tc.name, err, exitcode.Code(err), tc.code)
		}
		var ae *auth.Error
		if tc.code == exitcode.AuthFailed && (!errors.As(err, &ae) || ae.Host != verifytest.Ref.RegistryStr()) {
			t.Errorf("stuck(%s) = %v, want an *auth.Error naming %s", tc.name, err, verifytest.Ref.RegistryStr())
		}
	}
}

func TestKubernetesCallForbidden(t *testing.T) {
	k := &Runtime{}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "j", errors.New("no RBAC"))
	tries := 0
	err := k.call(context.Background(), "patch", "jobs", func() error { tries++; return forbidden })
	if !errors.Is(err, ErrForbidden) || exitcode.Code(err) != exitcode.VerifyNotRun || tries != 1 {
		t.Errorf("call(forbidden) = %v (code %d) after %d tries, want ErrForbidden, code 7, one try", err, exitcode.Code(err), tries)
	}
	tries = 0
	busy := apierrors.NewServiceUnavailable("etcd busy")
	err = k.call(context.Background(), "get", "jobs", func() error {
		tries++
		if tries < 3 {
			return busy
		}
		return nil
	})
	if err != nil || tries != 3 {
		t.Errorf("call(503, 503, ok) = %v after %d tries, want nil after 3", err, tries)
	}
}

// TestPodDeletedAtTheDeadline: the Job's activeDeadlineSeconds and the
// run's context are both verify.timeout; a pod deleted as the context's
// deadline passes is the deadline (ErrJobDeadline), not "deleted by
// someone", even though the Job can no longer be read on that context
// (TestKubernetesE2E's 5 s case failed so in one CI-like run). A deletion
// while the context runs and the Job shows no deadline is not one.
func TestPodDeletedAtTheDeadline(t *testing.T) {
	pod := podWith(corev1.ContainerState{}, "")
	pod.Namespace, pod.Status.Phase = "ns", corev1.PodPending
	pod.Labels = map[string]string{"batch.kubernetes.io/job-name": "imagectl-verify-x"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "imagectl-verify-x", Namespace: "ns"}}
	c := &clients{api: fake.NewClientset(job), ns: "ns"}
	k := &Runtime{}

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if err := k.podDeleted(ctx, c, pod); !errors.Is(err, ErrJobDeadline) || exitcode.Code(err) != exitcode.VerifyNotRun {
		t.Errorf("pod deleted after the run's deadline: %v (code %d), want ErrJobDeadline, code %d", err, exitcode.Code(err), exitcode.VerifyNotRun)
	}

	err := k.podDeleted(context.Background(), c, pod)
	if errors.Is(err, ErrJobDeadline) || err == nil || !strings.Contains(err.Error(), "deleted before it finished") {
		t.Errorf("pod deleted with no deadline anywhere: %v, want \"deleted before it finished\"", err)
	}
}
