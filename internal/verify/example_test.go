package verify_test

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/verify"
)

// RenderJob turns a lock into the Job a GPU node runs; no cluster needed.
func ExampleRenderJob() {
	l, err := lock.Read("testdata/h200-torch2.11-cu130.lock.json")
	if err != nil {
		panic(err)
	}
	ref, err := name.NewDigest("registry.example/ml/pytorch@sha256:" + strings.Repeat("0f", 32))
	if err != nil {
		panic(err)
	}
	cm, job, err := verify.RenderJob(l, ref, verify.JobConfig{StorageClaim: "ml-storage"})
	if err != nil {
		panic(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	gpus := c.Resources.Limits[verify.GPUResource]
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

// Run with the podman runtime starts one container per probe; Args shows
// the command line.
func ExamplePodman_Args() {
	p := &verify.Podman{Image: "oci:/var/tmp/demo", Storage: "/mnt/storage", StoragePath: "/storage"}
	fmt.Println(strings.Join(p.Args("/tmp/probes", verify.Probe{Script: "env.py"}), " "))
	// Output:
	// run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --shm-size 1g -e NCCL_NVLS_ENABLE=0 -e NVSHMEM_DISABLE_NVLS=1 -e TORCH_SYMM_MEM_DISABLE_MULTICAST=1 -v /tmp/probes:/imagectl-probes:ro -v /mnt/storage:/storage oci:/var/tmp/demo python3 /imagectl-probes/env.py
}
