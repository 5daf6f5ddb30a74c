package cmd

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/mirror"
)

func TestMirrorCmd(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	base := host + "/nvidia/cuda:12.1.1-runtime-ubuntu22.04"
	ref, _ := name.ParseReference(base)
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	specFile := filepath.Join(dir, "m.hcl")
	hcl := `variable "registry" { type = string }
image "m" {
  base   = "` + base + `"
  python = "3.11"
  repos {
    staging = "${var.registry}/staging/m"
    release = "${var.registry}/m"
    mirror  = "${var.registry}/platform/mirror"
  }
}
`
	if err := os.WriteFile(specFile, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runSpecCmd(t, "mirror", specFile, "--var", "registry="+host, "-o", "json")
	if code != 0 {
		t.Fatalf("imagectl mirror: exit %d\n%s", code, stderr)
	}
	var res []mirror.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("imagectl mirror -o json: %v\n%s", err, out)
	}
	d, _ := idx.Digest()
	if len(res) != 1 || res[0].Target != host+"/platform/mirror/nvidia/cuda@"+d.String() || res[0].Present {
		t.Errorf("imagectl mirror -o json = %+v, want one fresh copy to %s/platform/mirror/nvidia/cuda@%s", res, host, d)
	}
	// Human output: the target on stdout, the summary on stderr; a rerun
	// finds it there.
	out, stderr, code = runSpecCmd(t, "mirror", specFile, "--var", "registry="+host)
	if code != 0 || strings.TrimSpace(out) != res[0].Target || !strings.Contains(stderr, "already mirrored") {
		t.Errorf("imagectl mirror again: exit %d, stdout %q, stderr %q; want the target and \"already mirrored\"", code, out, stderr)
	}
	// A spec without repos.mirror is an error naming the file.
	if err := os.WriteFile(specFile, []byte(strings.Replace(hcl, `mirror  = "${var.registry}/platform/mirror"`, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runSpecCmd(t, "mirror", specFile, "--var", "registry="+host); code != 1 {
		t.Errorf("imagectl mirror without repos.mirror: exit %d (%s), want 1", code, stderr)
	}
}
