package kubernetes_test

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/verify/kubernetes"
)

// RenderJob turns a lock into the Job a GPU node runs; no cluster needed.
func ExampleRenderJob() {
	l, err := lock.Read("../testdata/h200-torch2.11-cu130.lock.json")
	if err != nil {
		panic(err)
	}
	ref, err := name.NewDigest("registry.example/ml/pytorch@sha256:" + strings.Repeat("0f", 32))
	if err != nil {
		panic(err)
	}
	cm, job, err := kubernetes.RenderJob(l, ref, kubernetes.JobConfig{StorageClaim: "ml-storage"})
	if err != nil {
		panic(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	gpus := c.Resources.Limits[kubernetes.GPUResource]
	fmt.Println(job.Name, cm.Name)
	fmt.Println(c.Image)
	fmt.Println("gpus:", gpus.String())
	for _, v := range job.Spec.Template.Spec.Volumes {
		switch {
		case v.EmptyDir != nil:
			fmt.Printf("%s: emptyDir %s %s\n", v.Name, v.EmptyDir.Medium, v.EmptyDir.SizeLimit)
		case v.PersistentVolumeClaim != nil:
			fmt.Printf("%s: claim %s\n", v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	// Output:
	// imagectl-verify-0f0f0f0f0f0f imagectl-verify-0f0f0f0f0f0f-probes
	// registry.example/ml/pytorch@sha256:0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f
	// gpus: 2
	// dshm: emptyDir Memory 1Gi
	// storage: claim ml-storage
}
