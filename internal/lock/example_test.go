package lock_test

import (
	"context"
	"fmt"
	"os"

	"imagectl/internal/lock"
	"imagectl/internal/spec"
)

func ExampleResolve() {
	ctx := context.Background()
	imgs, err := spec.Load(ctx, []string{"specs/demo.hcl"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	l, err := lock.Resolve(ctx, imgs[0], lock.WithBuildkit(os.Getenv("BUILDKIT_HOST")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	if err := lock.Write(lock.Path("images", l.Name), l); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

func ExampleDiff() {
	old := &lock.Lock{Pip: []lock.Wheel{{Name: "demo-core", Version: "1.0.0"}, {Name: "demo-util", Version: "1.0.0"}}}
	new := &lock.Lock{Pip: []lock.Wheel{{Name: "demo-core", Version: "1.0.0"}, {Name: "demo-util", Version: "1.1.0"}}}
	lock.Diff(old, new).WriteText(os.Stdout)
	// Output:
	// ~ pip  demo-util 1.0.0 -> 1.1.0
	// 1 changed, 0 added, 0 removed
}
