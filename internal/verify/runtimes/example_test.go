package runtimes_test

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/lock"
	"imagectl/internal/verify"
	"imagectl/internal/verify/podman"
	"imagectl/internal/verify/runtimes"
)

// Select names the runtime once; Runtime builds it per image by digest,
// from the common settings and that runtime's own options.
func ExampleSelect() {
	sel, err := runtimes.Select(context.Background(), "docker",
		runtimes.WithStorage("/mnt/storage"), runtimes.WithGPUs(2),
		runtimes.WithPodman(podman.WithGPUMode("docker")))
	if err != nil {
		panic(err)
	}
	ref, err := name.NewDigest("registry.example/ml/pytorch@sha256:0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f")
	if err != nil {
		panic(err)
	}
	l := &lock.Lock{Name: "pytorch"}
	l.Runtime.Storage.Path = "/storage"
	rt, err := sel.Runtime(l, ref)
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	_, perProbe := rt.(verify.Execer)
	fmt.Println(sel.Kind, rt.Name(), perProbe)
	// Output:
	// docker docker true
}
