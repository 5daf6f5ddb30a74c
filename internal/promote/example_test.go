package promote_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"imagectl/internal/promote"
	"imagectl/internal/releasefile"
)

// The release pipeline records each month's digest; promote.Run then makes
// the registry match the file.
func ExampleRecord() {
	dir, _ := os.MkdirTemp("", "releases")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "images", "pytorch-2.6-cu124", releasefile.FileName)
	nov := "registry.example/staging/pytorch@sha256:" + strings.Repeat("1", 64)
	dec := "registry.example/staging/pytorch@sha256:" + strings.Repeat("2", 64)
	for _, r := range []releasefile.Release{
		{Source: nov, Month: "2026-11", Tags: []string{"2.6-cu124-2026.11"}},
		{Source: dec, Month: "2026-12", Tags: []string{"2.6-cu124-2026.12"}},
	} {
		if err := releasefile.Record(path, "pytorch-2.6-cu124", "registry.example/ml/pytorch", r, "2.6-cu124"); err != nil {
			fmt.Println(err)
			return
		}
	}
	f, err := releasefile.ReadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range promote.List(f) {
		fmt.Println(l.Tag, l.Digest[:13], l.Month, l.Moving)
	}
	// Output:
	// 2.6-cu124 sha256:222222 2026-12 true
	// 2.6-cu124-2026.12 sha256:222222 2026-12 false
	// 2.6-cu124-2026.11 sha256:111111 2026-11 false
}
