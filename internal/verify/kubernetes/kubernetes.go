// Package kubernetes runs the verification probes as a Kubernetes Job on a
// GPU node, driven through the API server (client-go), and renders that Job
// (RenderJob) for --render-job.
package kubernetes

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"imagectl/internal/lock"
	"imagectl/internal/shell"
	"imagectl/internal/verify"
)

// GPUResource is the extended resource the NVIDIA device plugin offers.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// JobConfig shapes the Kubernetes Job that runs the probes on a GPU node.
type JobConfig struct {
	// Namespace of the Job and its ConfigMap. The default is none (the
	// namespace kubectl applies to).
	Namespace string
	// StorageClaim is the PersistentVolumeClaim mounted at the lock's
	// runtime.storage.path. The default is an emptyDir, which still lets the
	// two compile processes share the cache inside the one pod.
	StorageClaim string
	// Python is the interpreter inside the image. The default is the
	// lock's (verify.ImagePython), else python3 for a lock that records none.
	Python string
	// ShmSize is the size limit of the memory-backed /dev/shm. The default
	// is the lock's runtime.min_shm_bytes, at least 1Gi.
	ShmSize string
	// Iters and Warmup are the timed and warm-up all-reduce iterations.
	// The defaults are 20 and 5.
	Iters, Warmup int
}

// storageReadyKey is the ConfigMap key of the empty file mounted as the
// lock's runtime.storage.ready_file when the storage is an emptyDir.
const storageReadyKey = "storage-ready"

// JobName is the Job's name for an image digest: imagectl-verify-<12 hex>.
func JobName(ref name.Digest) string {
	hex := strings.TrimPrefix(ref.DigestStr(), "sha256:")
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return "imagectl-verify-" + hex
}

// RenderJob returns the ConfigMap holding the probes and the batch/v1 Job
// that runs them in the image, by digest, with the GPUs (nvidia.com/gpu
// limits), a memory-backed emptyDir at /dev/shm and the storage volume.
// The Job's log (RunBatch's, or verify.Recorded's for a copied one) is
// evaluated exactly like an in-place run.
func RenderJob(l *lock.Lock, ref name.Digest, cfg JobConfig) (*corev1.ConfigMap, *batchv1.Job, error) {
	if cfg.Python == "" {
		cfg.Python = cmp.Or(verify.ImagePython(l), "python3")
	}
	if cfg.Iters <= 0 {
		cfg.Iters = 20
	}
	if cfg.Warmup < 0 {
		return nil, nil, errors.New("negative warm-up iterations")
	} else if cfg.Warmup == 0 {
		cfg.Warmup = 5
	}
	shm := *resource.NewQuantity(verify.ShmBytes(l), resource.BinarySI)
	if cfg.ShmSize != "" {
		q, err := resource.ParseQuantity(cfg.ShmSize)
		if err != nil {
			return nil, nil, fmt.Errorf("shm size %q: %w", cfg.ShmSize, err)
		}
		shm = q
	}
	scripts, err := verify.ProbeScripts()
	if err != nil {
		return nil, nil, err
	}
	jobName := JobName(ref)
	labels := map[string]string{
		"app.kubernetes.io/name":       "imagectl-verify",
		"app.kubernetes.io/managed-by": "imagectl",
	}
	annotations := map[string]string{
		"imagectl.dev/image":       ref.String(),
		"imagectl.dev/lock":        l.Name,
		"imagectl.dev/lock-digest": l.Digest,
	}
	data := map[string]string{"run.sh": jobScript(l, cfg)}
	for n, b := range scripts {
		data[n] = string(b)
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: jobName + "-probes", Namespace: cfg.Namespace, Labels: labels, Annotations: annotations},
		Data:       data,
	}

	timeout := time.Duration(l.Verify.Timeout)
	if timeout <= 0 {
		timeout = verify.DefaultTimeout
	}
	deadline := int64(timeout / time.Second)
	backoff := int32(0)
	ttl := int32(3600)
	mode := int32(0o555)
	// The probes stop within seconds of SIGTERM; a deleted Job's pod must
	// not linger for the default 30 s.
	grace := int64(10)
	// The probes never call the API server.
	automount := false

	container := corev1.Container{
		Name:  "verify",
		Image: ref.String(),
		// args, not command: the image's entrypoint (the init) stays PID 1
		// and sets TMPDIR, the caches and the fingerprint the probes check.
		Args: []string{"/bin/sh", verify.ProbeMount + "/run.sh"},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "probes", MountPath: verify.ProbeMount, ReadOnly: true},
			{Name: "dshm", MountPath: "/dev/shm"},
		},
		ImagePullPolicy: corev1.PullIfNotPresent,
		// The multicast switches, and the digest for the init's
		// fingerprint: the log then proves the probes ran inside it.
		Env: jobEnv(ref),
	}
	volumes := []corev1.Volume{
		{Name: "probes", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, DefaultMode: &mode}}},
		{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}},
	}
	if sp := l.Runtime.Storage.Path; sp != "" {
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "storage", MountPath: sp})
		src := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		if cfg.StorageClaim != "" {
			src = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: cfg.StorageClaim}}
		} else if rf := l.Runtime.Storage.ReadyFile; rf != "" {
			// The emptyDir stands in for the platform's storage as
			// ReadyStorage's folder does for a container: it carries
			// the ready file (an empty file of the ConfigMap), so the init
			// finds the storage ready and puts TMPDIR, the caches and the
			// fingerprint on it instead of waiting storage.timeout.
			data[storageReadyKey] = ""
			container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "probes", MountPath: rf, SubPath: storageReadyKey, ReadOnly: true})
		}
		volumes = append(volumes, corev1.Volume{Name: "storage", VolumeSource: src})
	}
	var tolerations []corev1.Toleration
	if !l.Verify.CPUOnly {
		n := resource.NewQuantity(int64(max(l.Verify.MinGPUs, 1)), resource.DecimalSI)
		container.Resources = corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{GPUResource: *n},
			Requests: corev1.ResourceList{GPUResource: *n},
		}
		tolerations = []corev1.Toleration{{Key: string(GPUResource), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: jobName, Namespace: cfg.Namespace, Labels: labels, Annotations: annotations},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &backoff,
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: &grace,
					AutomountServiceAccountToken:  &automount,
					Containers:                    []corev1.Container{container},
					Volumes:                       volumes,
					Tolerations:                   tolerations,
				},
			},
		},
	}
	if err := ValidateJob(cm, job); err != nil {
		return nil, nil, err
	}
	return cm, job, nil
}

// jobScript is run.sh: every probe in the order Run evaluates them.
func jobScript(l *lock.Lock, cfg JobConfig) string {
	var b strings.Builder
	q := shell.Quote
	fmt.Fprintf(&b, "#!/bin/sh\n# imagectl verify probes for %s (lock %s)\nset -u\nP=%s\nPY=%s\n", l.Name, l.Digest, verify.ProbeMount, q(cfg.Python))
	envArgs := ""
	if fp := l.Runtime.FingerprintPath; fp != "" {
		envArgs = " --fingerprint " + q(fp)
	}
	if l.Python.Path != "" {
		envArgs += " --interpreter " + q(l.Python.Path)
	}
	fmt.Fprintf(&b, "\"$PY\" \"$P/env.py\"%s\n", envArgs)
	if l.Core.Torch == "" {
		return b.String()
	}
	b.WriteString("\"$PY\" \"$P/torchinfo.py\"\n")
	device := "cuda"
	if l.Verify.CPUOnly {
		device = "cpu"
	} else {
		nbytes := l.Verify.AllReduceBytes
		if nbytes <= 0 {
			nbytes = 256 << 20
		}
		fmt.Fprintf(&b, "\"$PY\" \"$P/allreduce.py\" --bytes %d --iters %d --warmup %d\n", nbytes, cfg.Iters, cfg.Warmup)
	}
	if l.Verify.CompileCache {
		fmt.Fprintf(&b, "D=\"${TORCHINDUCTOR_CACHE_DIR:-%s}/imagectl-verify-$(date +%%s)-$$\"\n", cmp.Or(l.Runtime.Caches.Inductor, "/tmp"))
		fmt.Fprintf(&b, "\"$PY\" \"$P/compile.py\" --cache-dir \"$D\" --phase cold --device %s\n", device)
		fmt.Fprintf(&b, "\"$PY\" \"$P/compile.py\" --cache-dir \"$D\" --phase warm --device %s --remove-after\n", device)
	}
	return b.String()
}

// ValidateJob checks the rendered objects against the Kubernetes API
// types: they survive a strict YAML round trip into the typed structs (no
// unknown or misspelt fields), names are DNS-1123, the image is pinned by
// digest, resource quantities parse, every mount names a volume, /dev/shm
// is memory-backed and the pod never restarts in place.
func ValidateJob(cm *corev1.ConfigMap, job *batchv1.Job) error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }

	for _, o := range []struct {
		obj  any
		into any
	}{{cm, &corev1.ConfigMap{}}, {job, &batchv1.Job{}}} {
		b, err := yaml.Marshal(o.obj)
		if err != nil {
			bad("encoding: %v", err)
			continue
		}
		if err := yaml.UnmarshalStrict(b, o.into); err != nil {
			bad("strict decode: %v", err)
		}
	}
	for _, n := range []string{cm.Name, job.Name} {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			bad("name %q: %s", n, msg)
		}
	}
	if len(job.Name) > 63 {
		bad("job name %q is longer than 63 characters (it becomes a label value)", job.Name)
	}
	for k := range cm.Data {
		for _, msg := range validation.IsConfigMapKey(k) {
			bad("configmap key %q: %s", k, msg)
		}
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		bad("job type is %s %s, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	spec := job.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever && spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		bad("restartPolicy %q: a Job's pod needs Never or OnFailure", spec.RestartPolicy)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			bad("volume %q: %s", v.Name, msg)
		}
		vols[v.Name] = v
	}
	if len(spec.Containers) == 0 {
		bad("no containers")
	}
	for _, c := range spec.Containers {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			bad("container %q: %s", c.Name, msg)
		}
		if _, err := name.NewDigest(c.Image); err != nil {
			bad("container %q image %q is not pinned by digest: %v", c.Name, c.Image, err)
		}
		shm := false
		for _, m := range c.VolumeMounts {
			v, ok := vols[m.Name]
			if !ok {
				bad("container %q mounts unknown volume %q", c.Name, m.Name)
				continue
			}
			if m.MountPath == "/dev/shm" {
				shm = v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory
			}
		}
		if !shm {
			bad("container %q has no memory-backed emptyDir at /dev/shm", c.Name)
		}
		for rn, q := range c.Resources.Limits {
			if rq, ok := c.Resources.Requests[rn]; ok && rn == GPUResource && rq.Cmp(q) != 0 {
				bad("container %q: %s request %s differs from limit %s (extended resources need them equal)", c.Name, rn, rq.String(), q.String())
			}
			if _, err := resource.ParseQuantity(q.String()); err != nil {
				bad("container %q limit %s: %v", c.Name, rn, err)
			}
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("invalid Kubernetes Job %s: %s", job.Name, strings.Join(errs, "; "))
	}
	return nil
}

// MarshalJob renders the ConfigMap and the Job as one multi-document YAML
// stream, ready for kubectl apply -f -.
func MarshalJob(cm *corev1.ConfigMap, job *batchv1.Job) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range []any{cm, job} {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encoding manifest: %w", err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

func jobEnv(ref name.Digest) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, kv := range verify.ProbeEnv(func(string) string { return "" }, ref.DigestStr(), nil) {
		k, v, _ := strings.Cut(kv, "=")
		out = append(out, corev1.EnvVar{Name: k, Value: v})
	}
	return out
}
