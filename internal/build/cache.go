package build

import (
	"encoding/csv"
	"fmt"
	"strings"

	"github.com/moby/buildkit/client"
)

// ParseCacheOption parses a cache import/export option in buildctl's CSV
// syntax, e.g. "type=registry,ref=127.0.0.1:5000/cache/demo:buildcache".
func ParseCacheOption(s string) (client.CacheOptionsEntry, error) {
	r := csv.NewReader(strings.NewReader(s))
	fields, err := r.Read()
	if err != nil {
		return client.CacheOptionsEntry{}, fmt.Errorf("parsing cache option %q: %w", s, err)
	}
	e := client.CacheOptionsEntry{Attrs: map[string]string{}}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return client.CacheOptionsEntry{}, fmt.Errorf("cache option %q: field %q is not key=value", s, f)
		}
		if k == "type" {
			e.Type = v
			continue
		}
		e.Attrs[k] = v
	}
	if e.Type == "" {
		return client.CacheOptionsEntry{}, fmt.Errorf("cache option %q: type is missing (e.g. type=registry,ref=REPO:TAG)", s)
	}
	if e.Type == "registry" && e.Attrs["ref"] == "" {
		return client.CacheOptionsEntry{}, fmt.Errorf("cache option %q: type=registry needs ref=REPO:TAG", s)
	}
	return e, nil
}
