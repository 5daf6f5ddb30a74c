package compat

import "testing"

func TestCUDAOfVariant(t *testing.T) {
	for in, want := range map[string]string{"cu118": "11.8", "cu124": "12.4", "cu130": "13.0", "cpu": "", "cuXY": "", "": ""} {
		if got := CUDAOfVariant(in); got != want {
			t.Errorf("CUDAOfVariant(%q) = %q, want %q", in, got, want)
		}
		if want != "" && Variant(want) != in {
			t.Errorf("Variant(%q) = %q, want %q", want, Variant(want), in)
		}
	}
}
