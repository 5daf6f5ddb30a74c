package resolve_test

import (
	"context"
	"fmt"
	"os"

	"imagectl/internal/lock"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/spec"
)

func ExampleImage() {
	ctx := context.Background()
	imgs, err := spec.Load(ctx, []string{"specs/demo.hcl"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	l, err := resolve.Image(ctx, imgs[0], resolve.WithBuildkit(os.Getenv("BUILDKIT_HOST")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	if err := lock.Write(lock.Path("images", l.Name), l); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
