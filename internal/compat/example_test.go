package compat_test

import (
	"fmt"

	"imagectl/internal/compat"
)

// Check names the choices for torch 2.6.0 on a CUDA 12.1 base instead of
// picking one.
func ExampleCheck() {
	_, problems := compat.Check(compat.Request{CUDA: "12.1", Torch: "2.6.0", DriverFloor: "525.60.13"})
	for _, p := range problems {
		fmt.Printf("%s: %s\n", p.Field, p.Summary)
	}
	res, problems := compat.Check(compat.Request{CUDA: "12.1", Torch: "2.6.0", TorchVariant: "cu124", DriverFloor: "525.60.13"})
	fmt.Println(len(problems), res.Wheel.Variant, res.MinorCompat, res.Wheel.NCCL, res.Wheel.CUDNN)
	// Output:
	// cuda: torch 2.6.0 publishes no cu121 wheel
	// 0 cu124 true nvidia-nccl-cu12==2.21.5 nvidia-cudnn-cu12==9.1.0.70
}

func ExampleLookupWheel() {
	w, _ := compat.LookupWheel("2.6.0", "cu118")
	f, _ := compat.LookupDriverFloor(w.CUDA)
	fmt.Println(w.IndexPath, w.NCCL, w.Python[0]+"-"+w.Python[len(w.Python)-1], f.Native, f.MinorCompat)
	// Output:
	// whl/cu118 nvidia-nccl-cu11==2.21.5 3.9-3.13 520.61.05 450.80.02
}
