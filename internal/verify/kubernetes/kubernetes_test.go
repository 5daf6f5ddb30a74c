package kubernetes

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"imagectl/internal/lock"
	"imagectl/internal/verify/verifytest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func TestRenderJob(t *testing.T) {
	l := readLock(t, "../testdata/h200-torch2.11-cu130.lock.json")
	cm, job, err := RenderJob(l, verifytest.Ref, JobConfig{Namespace: "gpu-verify", StorageClaim: "verify-storage"})
	if err != nil {
		t.Fatalf("RenderJob() error = %v", err)
	}
	got, err := MarshalJob(cm, job)
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/job.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("RenderJob() manifest differs from %s (-want +got):\n%s", golden, d)
	}

	// Decode the stream back into the API types, strictly.
	docs := strings.Split(string(got), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("manifest has %d documents, want 2", len(docs))
	}
	var cm2 corev1.ConfigMap
	var job2 batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cm2); err != nil {
		t.Fatalf("ConfigMap: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &job2); err != nil {
		t.Fatalf("Job: %v", err)
	}
	c := job2.Spec.Template.Spec.Containers[0]
	if c.Image != verifytest.Ref.String() {
		t.Errorf("image %q, want %q", c.Image, verifytest.Ref.String())
	}
	if q := c.Resources.Limits[GPUResource]; q.Value() != 2 {
		t.Errorf("nvidia.com/gpu limit %s, want 2 (verify.min_gpus)", q.String())
	}
	vols := map[string]corev1.Volume{}
	for _, v := range job2.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols["dshm"]; v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit.String() != "1Gi" {
		t.Errorf("dshm volume = %+v, want a 1Gi memory-backed emptyDir", v)
	}
	if v := vols["storage"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "verify-storage" {
		t.Errorf("storage volume = %+v, want the claim verify-storage", v)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["IMAGECTL_IMAGE_DIGEST"] != verifytest.Ref.DigestStr() || env["NCCL_NVLS_ENABLE"] != "0" {
		t.Errorf("container env = %v, want IMAGECTL_IMAGE_DIGEST=%s (for the init's fingerprint) and NCCL_NVLS_ENABLE=0", env, verifytest.Ref.DigestStr())
	}
	if len(c.Command) != 0 {
		t.Errorf("command %v overrides the image's entrypoint (the init); want args only", c.Command)
	}
	for _, s := range []string{"env.py", "torchinfo.py", "allreduce.py", "compile.py", "run.sh"} {
		if cm2.Data[s] == "" {
			t.Errorf("ConfigMap lacks %s", s)
		}
	}
	if !strings.Contains(cm2.Data["run.sh"], "--bytes 268435456") || !strings.Contains(cm2.Data["run.sh"], "--phase warm") {
		t.Errorf("run.sh does not run the all-reduce and the warm compile:\n%s", cm2.Data["run.sh"])
	}
}

func TestRenderJobCPUOnly(t *testing.T) {
	l := readLock(t, "../testdata/h200-torch2.11-cu130.lock.json")
	l.Verify.CPUOnly = true
	l.Runtime.Storage.Path = ""
	cm, job, err := RenderJob(l, verifytest.Ref, JobConfig{})
	if err != nil {
		t.Fatalf("RenderJob() error = %v", err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if _, ok := c.Resources.Limits[GPUResource]; ok {
		t.Errorf("CPU-only Job asks for GPUs: %v", c.Resources.Limits)
	}
	if strings.Contains(cm.Data["run.sh"], "allreduce.py") {
		t.Errorf("CPU-only run.sh runs the all-reduce")
	}
}

// With no storage claim the storage is an emptyDir that carries the
// lock's ready file (an empty file of the ConfigMap), as the container
// runtimes' throwaway folder does, so the init finds the storage ready; a
// claim's volume carries its own.
func TestRenderJobReadyStorage(t *testing.T) {
	l := readLock(t, "../testdata/h200-torch2.11-cu130.lock.json")
	l.Runtime.Storage.ReadyFile = "/tmp/imagectl-storage/.ready"
	readyMount := func(job *batchv1.Job) *corev1.VolumeMount {
		for _, m := range job.Spec.Template.Spec.Containers[0].VolumeMounts {
			if m.MountPath == l.Runtime.Storage.ReadyFile {
				return &m
			}
		}
		return nil
	}
	cm, job, err := RenderJob(l, verifytest.Ref, JobConfig{})
	if err != nil {
		t.Fatalf("RenderJob() error = %v", err)
	}
	var storage *corev1.Volume
	for i, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == "storage" {
			storage = &job.Spec.Template.Spec.Volumes[i]
		}
	}
	if storage == nil || storage.EmptyDir == nil {
		t.Fatalf("storage volume = %+v, want an emptyDir", storage)
	}
	m := readyMount(job)
	if m == nil || m.Name != "probes" || m.SubPath != storageReadyKey || !m.ReadOnly {
		t.Fatalf("mount at %s = %+v, want the ConfigMap's %s, read-only", l.Runtime.Storage.ReadyFile, m, storageReadyKey)
	}
	if v, ok := cm.Data[storageReadyKey]; !ok || v != "" {
		t.Errorf("ConfigMap %s = %q (present %v), want an empty file", storageReadyKey, v, ok)
	}
	if err := ValidateJob(cm, job); err != nil {
		t.Errorf("ValidateJob() = %v", err)
	}

	cm, job, err = RenderJob(l, verifytest.Ref, JobConfig{StorageClaim: "verify-cache"})
	if err != nil {
		t.Fatalf("RenderJob() error = %v", err)
	}
	if m := readyMount(job); m != nil {
		t.Errorf("with a claim, the ready file is mounted over it: %+v", m)
	}
	if _, ok := cm.Data[storageReadyKey]; ok {
		t.Errorf("with a claim, the ConfigMap has %s", storageReadyKey)
	}
}

// The YAML the docs give for pointing imagectl at a cluster is the YAML
// the end-to-end tests apply: each page shows docs/kubernetes/NAME byte
// for byte, and shows no other Kubernetes YAML.
func TestDocsShowTheTestedYAML(t *testing.T) {
	files := map[string]string{}
	for _, n := range []string{"verifier-rbac.yaml", "verify-storage.yaml"} {
		b, err := os.ReadFile("../../../docs/kubernetes/" + n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = string(b)
	}
	for page, want := range map[string][]string{
		"verify.md":    {"verifier-rbac.yaml"},
		"scale-out.md": {"verifier-rbac.yaml", "verify-storage.yaml"},
	} {
		b, err := os.ReadFile("../../../docs/" + page)
		if err != nil {
			t.Fatal(err)
		}
		shown := map[string]bool{}
		for i, block := range strings.Split(string(b), "```yaml\n")[1:] {
			body, _, ok := strings.Cut(block, "```")
			if !ok {
				t.Fatalf("docs/%s: yaml block %d is not closed", page, i+1)
			}
			if !strings.Contains(body, "apiVersion:") {
				continue
			}
			name := ""
			for n, f := range files {
				if body == f {
					name = n
				}
			}
			if name == "" {
				t.Errorf("docs/%s: yaml block %d is none of docs/kubernetes/*.yaml as it is (copy the file in):\n%s", page, i+1, body)
				continue
			}
			shown[name] = true
		}
		for _, n := range want {
			if !shown[n] {
				t.Errorf("docs/%s does not show docs/kubernetes/%s as it is", page, n)
			}
		}
	}
}

// The Job runs the probes with the lock's interpreter (the venv made from
// python.path) and has env.py check it.
func TestRenderJobLockedPython(t *testing.T) {
	l := readLock(t, "../testdata/h200-torch2.11-cu130.lock.json")
	l.Python = lock.Python{Version: "3.12.3", Path: "/usr/bin/python3.12", Provider: "apt"}
	cm, _, err := RenderJob(l, verifytest.Ref, JobConfig{})
	if err != nil {
		t.Fatalf("RenderJob() error = %v", err)
	}
	run := cm.Data["run.sh"]
	for _, want := range []string{"PY='/opt/venv/bin/python'", "--interpreter '/usr/bin/python3.12'"} {
		if !strings.Contains(run, want) {
			t.Errorf("run.sh lacks %q:\n%s", want, run)
		}
	}
}

func TestValidateJobRejects(t *testing.T) {
	l := readLock(t, "../testdata/h200-torch2.11-cu130.lock.json")
	for _, tc := range []struct {
		name string
		edit func(*corev1.ConfigMap, *batchv1.Job)
		want string
	}{
		{"tag instead of digest", func(_ *corev1.ConfigMap, j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].Image = "reg/pytorch:latest"
		}, "not pinned by digest"},
		{"disk-backed shm", func(_ *corev1.ConfigMap, j *batchv1.Job) {
			for i := range j.Spec.Template.Spec.Volumes {
				if j.Spec.Template.Spec.Volumes[i].Name == "dshm" {
					j.Spec.Template.Spec.Volumes[i].EmptyDir.Medium = corev1.StorageMediumDefault
				}
			}
		}, "memory-backed"},
		{"restart always", func(_ *corev1.ConfigMap, j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}, "restartPolicy"},
		{"bad name", func(_ *corev1.ConfigMap, j *batchv1.Job) { j.Name = "Imagectl_Verify" }, "Imagectl_Verify"},
		{"unknown volume", func(_ *corev1.ConfigMap, j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "nope"
		}, "unknown volume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm, job, err := RenderJob(l, verifytest.Ref, JobConfig{})
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(cm, job)
			err = ValidateJob(cm, job)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ValidateJob() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func readLock(t *testing.T, path string) *lock.Lock {
	t.Helper()
	l, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
