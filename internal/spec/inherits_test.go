package spec_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"imagectl/internal/spec"
)

// A deep diamond of inherits (each image inheriting the next one ten times)
// decodes in linear time.
func TestInheritsDiamond(t *testing.T) {
	var b strings.Builder
	const depth = 30
	for i := 0; i < depth; i++ {
		parents := strings.Repeat(fmt.Sprintf(`"i%d", `, i+1), 10)
		fmt.Fprintf(&b, "image \"i%d\" {\n  inherits = [%s]\n}\n", i, parents)
	}
	fmt.Fprintf(&b, "image \"i%d\" {\n  base = \"registry.example/b:1\"\n  python = \"3.11\"\n  repos {\n    staging = \"registry.example/s/x\"\n    release = \"registry.example/r/x\"\n  }\n}\n", depth)
	start := time.Now()
	imgs, err := spec.LoadSource(context.Background(), "diamond.hcl", []byte(b.String()), spec.WithEnv(envOf(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != depth+1 || imgs[0].Base != "registry.example/b:1" {
		t.Errorf("LoadSource(diamond) = %d images, first base %q", len(imgs), imgs[0].Base)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("LoadSource(diamond) took %v", d)
	}
}
