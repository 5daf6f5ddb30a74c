package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/build/layerplan"
	"imagectl/internal/lock"
)

func TestPlan(t *testing.T) {
	noApt := unitLock()
	noApt.Apt = nil
	noPip := unitLock()
	noPip.Pip = nil
	notFrozen := unitLock()
	notFrozen.Frozen = nil

	for _, tc := range []struct {
		name string
		lock *lock.Lock
		want []string
	}{
		{"full", unitLock(), []string{"base", "system", "venv", "big:demo-core", "big:nvidia-nccl-cu12", "big:torch", "periphery", "init", "runtime"}},
		{"no apt", noApt, []string{"base", "venv", "big:demo-core", "big:nvidia-nccl-cu12", "big:torch", "periphery", "init", "runtime"}},
		{"no pip", noPip, []string{"base", "system", "init", "runtime"}},
		{"demo-core not frozen", notFrozen, []string{"base", "system", "venv", "big:nvidia-nccl-cu12", "big:torch", "periphery", "init", "runtime"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := layerplan.Of(tc.lock)
			var got []string
			for _, l := range p.Layers {
				got = append(got, l.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Plan(%s) layers (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

func TestPlanSortsAndPins(t *testing.T) {
	p := layerplan.Of(unitLock())
	if want := "registry.example.invalid:5000/imagectl/debian-base@sha256:" + sum("manifest"); p.Base != want {
		t.Errorf("Plan().Base = %q, want %q", p.Base, want)
	}
	sys := p.Layers[1]
	if sys.Debs[0].Name != "jq" || sys.Debs[1].Name != "libjq1" {
		t.Errorf("system debs = %v, want sorted by name", sys.Debs)
	}
	peri := p.Layers[len(p.Layers)-3]
	if len(peri.Wheels) != 1 || peri.Wheels[0].Name != "demo-util" {
		t.Errorf("periphery wheels = %v, want [demo-util]", peri.Wheels)
	}
}

func TestPlanPullsFromMirror(t *testing.T) {
	l := &lock.Lock{Base: lock.Base{Ref: "nvidia/cuda:12.1.1-runtime-ubuntu22.04", Mirror: "127.0.0.1:5000/platform/mirror/nvidia/cuda", ManifestDigest: "sha256:m"}}
	if got, want := layerplan.Of(l).Base, "127.0.0.1:5000/platform/mirror/nvidia/cuda@sha256:m"; got != want {
		t.Errorf("Plan().Base = %q, want the mirror's copy %q", got, want)
	}
}
