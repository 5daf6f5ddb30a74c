package bump_test

import (
	"fmt"
	"strings"

	"imagectl/internal/bump"
)

func ExampleFind() {
	dockerfile := "# pinned by imagectl bump\nFROM registry.example/ml/demo:demo-2026.11@sha256:" + strings.Repeat("a", 64) + " AS base\n"
	pins, err := bump.Find("Dockerfile", bump.KindOf("Dockerfile"), []byte(dockerfile))
	if err != nil {
		panic(err)
	}
	for _, p := range pins {
		fmt.Println(p.Line, p.Repository, p.Tag, p.Digest[:15])
	}
	// Output: 2 registry.example/ml/demo demo-2026.11 sha256:aaaaaaaa
}
