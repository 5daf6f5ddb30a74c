package compat

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPins(t *testing.T) {
	w := Wheel{Variant: "cu130", Archs: []string{"sm_90"}, NCCL: &Pin{Version: "2.28.9"}, CUDNN: &Pin{Version: "9.19.0"}}
	res := Resolved{Wheel: w, Floor: DriverFloor{MinorCompat: "580.65.06"}}
	for _, tc := range []struct {
		name string
		req  Request
		want Pins
	}{
		{"the wheel fills what is open", Request{Torch: "2.11.0"},
			Pins{TorchVariant: "cu130", Archs: []string{"sm_90"}, NCCL: "2.28.9", CUDNN: "9.19.0", DriverFloor: "580.65.06"}},
		{"named versions stay", Request{Torch: "2.11.0", NCCL: "2.28.9", DriverFloor: "590.0"},
			Pins{TorchVariant: "cu130", Archs: []string{"sm_90"}, NCCL: "2.28.9", CUDNN: "9.19.0", DriverFloor: "590.0"}},
		{"no torch: no wheel pins", Request{CUDA: "13.0", NCCL: "2.27.3"},
			Pins{NCCL: "2.27.3", DriverFloor: "580.65.06"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, res.Pins(tc.req)); d != "" {
				t.Errorf("Pins(%+v) (-want +got):\n%s", tc.req, d)
			}
		})
	}
}
