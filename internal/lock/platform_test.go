package lock

import (
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"imagectl/internal/compat"
)

// PlatformName names every platform a lock can have as v1.Platform.String
// and v1.ParsePlatform do (the lock's Base.Platform is String of a parsed
// name), variant included; an image's OSVersion, which String appends, is
// not part of the name.
func TestPlatformName(t *testing.T) {
	names := append(slices.Clone(compat.Platforms), "linux/arm64/v8", "linux/arm/v7")
	for _, n := range names {
		p, err := v1.ParsePlatform(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := PlatformName(p); got != n || got != p.String() {
			t.Errorf("PlatformName(ParsePlatform(%q)) = %q, want %q (String: %q)", n, got, n, p.String())
		}
	}
	p := &v1.Platform{OS: "linux", Architecture: "amd64", OSVersion: "10.0.17763"}
	if got := PlatformName(p); got != "linux/amd64" {
		t.Errorf("PlatformName(%+v) = %q, want linux/amd64 (String is %q)", *p, got, p.String())
	}
	if got := PlatformName(nil); got != "" {
		t.Errorf("PlatformName(nil) = %q, want \"\"", got)
	}
}

// ParsePlatformName is the one rule for a builder's platform, whether a
// --builder flag (build.ParseBuilder) or an option names it.
func TestParsePlatformName(t *testing.T) {
	for in, want := range map[string]string{"linux/arm64": "linux/arm64", "linux/arm/v7": "linux/arm/v7", " linux/amd64 ": "linux/amd64"} {
		if got, err := ParsePlatformName(in); err != nil || got != want {
			t.Errorf("ParsePlatformName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "linux", "linux/", "/arm64", "linux/arm64/v8/x", "linux/amd64:a/b/c"} {
		if got, err := ParsePlatformName(in); err == nil || !strings.Contains(err.Error(), "want OS/ARCH[/VARIANT]") {
			t.Errorf("ParsePlatformName(%q) = %q, %v; want an OS/ARCH[/VARIANT] error", in, got, err)
		}
	}
}
