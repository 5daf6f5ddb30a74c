package build

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
)

// The constraints pin the locked closure, local labels included, in name
// order; pip itself (the resolver) is left free; no pip, no file.
func TestConstraints(t *testing.T) {
	l := &lock.Lock{Name: "pytorch", Digest: "sha256:abc", Resolver: lock.Wheel{Name: "pip", Version: "23.0.1"}, Pip: []lock.Wheel{
		{Name: "torch", Version: "2.6.0+cu124"}, {Name: "nvidia-nccl-cu12", Version: "2.21.5"}, {Name: "numpy", Version: "2.2.1"},
	}}
	want := "# pip constraints of image pytorch: the locked wheel closure (lock sha256:abc).\n" +
		"# pip refuses to change any of these; PIP_CONSTRAINT= pip install ... opts one command out.\n" +
		"numpy==2.2.1\nnvidia-nccl-cu12==2.21.5\ntorch==2.6.0+cu124\n"
	if d := cmp.Diff(want, string(Constraints(l))); d != "" {
		t.Errorf("Constraints (-want +got):\n%s", d)
	}
	if c := Constraints(&lock.Lock{Name: "no-venv"}); c != nil {
		t.Errorf("Constraints of a lock without pip = %q, want nil", c)
	}
}

func TestImageConfigKeepsBaseEnv(t *testing.T) {
	cuda := ocispecs.Image{Config: ocispecs.ImageConfig{Env: []string{
		"PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"NVIDIA_REQUIRE_CUDA=cuda>=12.1 brand=tesla,driver>=470,driver<471",
		"CUDA_VERSION=12.1.1",
		"LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
		"NVIDIA_VISIBLE_DEVICES=all",
		"NVIDIA_DRIVER_CAPABILITIES=compute,utility",
	}}}
	for _, tc := range []struct {
		name string
		base ocispecs.Image
		env  map[string]string
		want []string
	}{
		{"cuda base", cuda, map[string]string{"PYTHONUNBUFFERED": "1"}, []string{
			"PATH=" + initconfig.VenvPath + "/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"NVIDIA_REQUIRE_CUDA=cuda>=12.1 brand=tesla,driver>=470,driver<471",
			"CUDA_VERSION=12.1.1",
			"LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
			"NVIDIA_VISIBLE_DEVICES=all",
			"NVIDIA_DRIVER_CAPABILITIES=compute,utility",
			"VIRTUAL_ENV=" + initconfig.VenvPath,
			"PIP_CONSTRAINT=" + ConstraintPath,
			"PYTHONUNBUFFERED=1",
		}},
		{"spec overrides", cuda, map[string]string{"NVIDIA_DRIVER_CAPABILITIES": "all", "PATH": "/custom/bin:/usr/bin"}, []string{
			"PATH=/custom/bin:/usr/bin",
			"NVIDIA_REQUIRE_CUDA=cuda>=12.1 brand=tesla,driver>=470,driver<471",
			"CUDA_VERSION=12.1.1",
			"LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
			"NVIDIA_VISIBLE_DEVICES=all",
			"NVIDIA_DRIVER_CAPABILITIES=all",
			"VIRTUAL_ENV=" + initconfig.VenvPath,
			"PIP_CONSTRAINT=" + ConstraintPath,
		}},
		{"spec opts out of the pip guard", ocispecs.Image{}, map[string]string{"PIP_CONSTRAINT": ""}, []string{
			"PATH=" + systemPath, "VIRTUAL_ENV=" + initconfig.VenvPath, "PIP_CONSTRAINT=",
		}},
		{"venv already on the base's PATH", ocispecs.Image{Config: ocispecs.ImageConfig{Env: []string{"PATH=/usr/bin:" + initconfig.VenvPath + "/bin"}}}, nil, []string{
			"PATH=" + initconfig.VenvPath + "/bin:/usr/bin", "VIRTUAL_ENV=" + initconfig.VenvPath, "PIP_CONSTRAINT=" + ConstraintPath,
		}},
		{"base without PATH", ocispecs.Image{}, nil, []string{"PATH=" + systemPath, "VIRTUAL_ENV=" + initconfig.VenvPath, "PIP_CONSTRAINT=" + ConstraintPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &lock.Lock{Name: "x", Env: tc.env, Pip: []lock.Wheel{{Name: "numpy"}}}
			got := ImageConfig(l, tc.base).Config.Env
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ImageConfig env (-want +got):\n%s", d)
			}
		})
	}
	if !strings.HasPrefix(withVenv("/a:/b"), initconfig.VenvPath+"/bin:/a:/b") {
		t.Errorf("withVenv(/a:/b) = %q", withVenv("/a:/b"))
	}
}

// With sshd or Jupyter declared, the image has no default command (the
// init then runs the services alone) and exposes their ports; without, the
// base's command (or /bin/bash) stays.
func TestImageConfigServices(t *testing.T) {
	base := ocispecs.Image{Config: ocispecs.ImageConfig{Cmd: []string{"bash"}}}
	l := &lock.Lock{}
	if got := ImageConfig(l, base).Config; !cmp.Equal(got.Cmd, []string{"bash"}) || got.ExposedPorts != nil {
		t.Errorf("without services: cmd %q, ports %v; want the base's bash and none", got.Cmd, got.ExposedPorts)
	}
	l.Runtime.User = &initconfig.User{Name: "jovyan", UID: 1000, GID: 1000}
	l.Runtime.SSH = &initconfig.SSH{Port: 2222}
	l.Runtime.Jupyter = &initconfig.Jupyter{}
	got := ImageConfig(l, base).Config
	if got.Cmd != nil {
		t.Errorf("with services: cmd %q, want none", got.Cmd)
	}
	if diff := cmp.Diff(map[string]struct{}{"2222/tcp": {}, "8888/tcp": {}}, got.ExposedPorts); diff != "" {
		t.Errorf("exposed ports (-want +got):\n%s", diff)
	}
}
