package verify

import "testing"

func TestCUDNN(t *testing.T) {
	for in, want := range map[int]string{90100: "9.1.0", 91900: "9.19.0", 90501: "9.5.1", 8902: "8.9.2", 8700: "8.7.0"} {
		if got := cudnnString(in); got != want {
			t.Errorf("cudnnString(%d) = %q, want %q", in, got, want)
		}
	}
	for _, tc := range []struct {
		locked, reported string
		want             bool
	}{
		{"9.1.0.70", "9.1.0", true},
		{"9.19.0.56", "9.19.0", true},
		{"9.1.0.70", "9.19.0", false},
		{"9.5.1.17", "9.1.0", false},
	} {
		if got := cudnnMatches(tc.locked, tc.reported); got != tc.want {
			t.Errorf("cudnnMatches(%q, %q) = %v, want %v", tc.locked, tc.reported, got, tc.want)
		}
	}
}

func TestArchSupports(t *testing.T) {
	torch26 := []string{"sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"}
	for _, tc := range []struct {
		name  string
		archs []string
		cc    string
		want  bool
	}{
		{"exact hopper", torch26, "9.0", true},
		{"ada on sm_86 cubin", torch26, "8.9", true},
		{"blackwell without kernels", torch26, "10.0", false},
		{"consumer blackwell without kernels", torch26, "12.0", false},
		{"ptx jit", []string{"sm_80", "compute_90"}, "10.0", true},
		{"ptx too new", []string{"compute_90"}, "8.0", false},
		{"family suffix", []string{"sm_90a"}, "9.0", true},
		{"unreadable", torch26, "nine", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, how := archSupports(tc.archs, tc.cc)
			if got != tc.want {
				t.Errorf("archSupports(%v, %q) = %v (%s), want %v", tc.archs, tc.cc, got, how, tc.want)
			}
		})
	}
}

func TestTorchMatches(t *testing.T) {
	for _, tc := range []struct {
		release, variant, have string
		want                   bool
	}{
		{"2.6.0", "cu124", "2.6.0+cu124", true},
		{"2.6.0", "cu124", "2.6.0", true}, // default-index wheel, no local label
		{"2.6.0", "cu118", "2.6.0+cu124", false},
		{"2.6.0", "cu124", "2.11.0+cu130", false},
		{"2.6.0+cu124", "", "2.6.0+cu124", true},
		{"2.6.0", "", "2.6.0+cpu", true},
	} {
		if got := torchMatches(tc.release, tc.variant, tc.have); got != tc.want {
			t.Errorf("torchMatches(%q, %q, %q) = %v, want %v", tc.release, tc.variant, tc.have, got, tc.want)
		}
	}
}

func TestParseProbe(t *testing.T) {
	out := []byte("NCCL INFO something\n{\"probe\": \"other\", \"ok\": false}\nnot json {\n{\"probe\": \"allreduce\", \"ok\": true, \"busbw_gbps\": 1.5}\n")
	var ar allReduceOut
	if err := parseProbe("allreduce", out, &ar); err != nil || !ar.OK || ar.BusBW != 1.5 {
		t.Errorf("parseProbe(allreduce) = %+v, %v; want ok with busbw 1.5", ar, err)
	}
	if err := parseProbe("compile-warm", out, &ar); err == nil {
		t.Errorf("parseProbe(compile-warm) found a line in output without one")
	}
}
