package podman_test

import (
	"fmt"
	"strings"

	"imagectl/internal/verify"
	"imagectl/internal/verify/podman"
)

// Run with the podman runtime starts one container per probe; Args shows
// the command line.
func ExampleRuntime_Args() {
	p, err := podman.New("oci:/var/tmp/demo", podman.WithStorage("/mnt/storage", "/storage"))
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Join(p.Args("/tmp/probes", verify.Probe{Script: "env.py"}), " "))
	// Output:
	// run --rm --network=none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --shm-size 1g -e NCCL_NVLS_ENABLE=0 -e NVSHMEM_DISABLE_NVLS=1 -e TORCH_SYMM_MEM_DISABLE_MULTICAST=1 -v /tmp/probes:/imagectl-probes:ro -v /mnt/storage:/storage oci:/var/tmp/demo python3 /imagectl-probes/env.py
}
