package spec_test

import (
	"context"
	"fmt"

	"imagectl/internal/spec"
)

// Load the shipped demo spec with the registry taken from a --var.
func ExampleLoad() {
	imgs, err := spec.Load(context.Background(), []string{"../../specs/demo.hcl"},
		spec.WithVars(map[string]string{"registry": "localhost:5000"}),
		spec.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, img := range imgs {
		fmt.Println(img.Name, img.Base, img.Python, img.Repos.Release, img.Runtime.MinShmBytes)
	}
	// Output:
	// demo localhost:5000/imagectl/debian-base:bookworm 3.11 localhost:5000/imagectl/demo 1073741824
}
