package spec_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/initconfig"
	"imagectl/internal/spec"
)

// An empty ssh or jupyter block turns the service on with the defaults,
// and the user's gid defaults to its uid; without the blocks, nothing.
func TestRuntimeUserAndServices(t *testing.T) {
	const src = `
image "on" {
  base   = "registry.example/base:1"
  python = "3.11"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
  runtime {
    user {
      name = "jovyan"
      uid  = 1000
    }
    ssh {}
    jupyter {}
  }
}
image "off" {
  inherits = []
  base   = "registry.example/base:1"
  python = "3.11"
  repos {
    staging = "registry.example/staging/y"
    release = "registry.example/y"
  }
}
`
	imgs, err := spec.LoadSource(context.Background(), "s.hcl", []byte(src), spec.WithEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]initconfig.Config{}
	for _, img := range imgs {
		got[img.Name] = img.Runtime
	}
	on := got["on"]
	if diff := cmp.Diff(&initconfig.User{Name: "jovyan", UID: 1000, GID: 1000}, on.User); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
	if on.SSH == nil || *on.SSH != (initconfig.SSH{}) || on.Jupyter == nil {
		t.Errorf("ssh = %+v, jupyter = %+v; want both on with the defaults", on.SSH, on.Jupyter)
	}
	if off := got["off"]; off.User != nil || off.SSH != nil || off.Jupyter != nil {
		t.Errorf("without the blocks: user %+v, ssh %+v, jupyter %+v; want none", off.User, off.SSH, off.Jupyter)
	}
}
