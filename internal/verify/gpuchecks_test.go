package verify

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/lock"
)

// The cuDNN and NCCL checks follow one rule: skipped when the lock names
// no version, or when a CPU-only image's torch reports none; failed when
// torch reports none, or a version that does not match the lock's (cuDNN:
// the wheel's first three components; NCCL: a prefix).
func TestLibraryVersionChecks(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	for _, tc := range []struct {
		name            string
		cudnn, nccl     string
		cpuOnly         bool
		out             torchOut
		wantDNN, wantNC Check
	}{
		{
			name: "match", cudnn: "9.1.0.70", nccl: "2.21.5",
			out:     torchOut{CUDNN: num(90100), NCCL: str("2.21.5")},
			wantDNN: Check{Name: "cudnn.version", Value: "9.1.0", Threshold: "== 9.1.0.70", Status: Pass},
			wantNC:  Check{Name: "nccl.version", Value: "2.21.5", Threshold: "== 2.21.5", Status: Pass},
		},
		{
			name:    "lock names none",
			out:     torchOut{CUDNN: num(90100), NCCL: str("2.21.5")},
			wantDNN: Check{Name: "cudnn.version", Value: "9.1.0", Status: Skip, Detail: "the lock names no cuDNN"},
			wantNC:  Check{Name: "nccl.version", Value: "2.21.5", Status: Skip, Detail: "the lock names no NCCL"},
		},
		{
			name: "cpu-only reports none", cudnn: "9.1.0.70", nccl: "2.21.5", cpuOnly: true,
			out:     torchOut{CUDNNError: "(no cudnn)", NCCLError: "(no nccl)"},
			wantDNN: Check{Name: "cudnn.version", Threshold: "== 9.1.0.70", Status: Skip, Detail: "CPU-only image; torch reports no cuDNN: (no cudnn)"},
			wantNC:  Check{Name: "nccl.version", Threshold: "== 2.21.5", Status: Skip, Detail: "CPU-only image; torch reports no NCCL: (no nccl)"},
		},
		{
			name: "reports none", cudnn: "9.1.0.70", nccl: "2.21.5",
			out:     torchOut{CUDNNError: "(no cudnn)", NCCLError: "(no nccl)"},
			wantDNN: Check{Name: "cudnn.version", Threshold: "== 9.1.0.70", Status: Fail, Detail: "lock has cuDNN 9.1.0.70, image's torch reports none (no cudnn)"},
			wantNC:  Check{Name: "nccl.version", Threshold: "== 2.21.5", Status: Fail, Detail: "lock has NCCL 2.21.5, image's torch reports none (no nccl)"},
		},
		{
			name: "drift", cudnn: "9.1.0.70", nccl: "2.21.5",
			out:     torchOut{CUDNN: num(91900), NCCL: str("2.28.9")},
			wantDNN: Check{Name: "cudnn.version", Value: "9.19.0", Threshold: "== 9.1.0.70", Status: Fail, Detail: "lock has cuDNN 9.1.0.70, image has 9.19.0"},
			wantNC:  Check{Name: "nccl.version", Value: "2.28.9", Threshold: "== 2.21.5", Status: Fail, Detail: "lock has NCCL 2.21.5, image has 2.28.9"},
		},
		{
			name: "nccl is a prefix", cudnn: "9.1.0", nccl: "2.21",
			out:     torchOut{CUDNN: num(90100), NCCL: str("2.21.5")},
			wantDNN: Check{Name: "cudnn.version", Value: "9.1.0", Threshold: "== 9.1.0", Status: Pass},
			wantNC:  Check{Name: "nccl.version", Value: "2.21.5", Threshold: "== 2.21", Status: Pass},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &lock.Lock{}
			l.Core.CUDNN, l.Core.NCCL, l.Verify.CPUOnly = tc.cudnn, tc.nccl, tc.cpuOnly
			got := map[string]Check{}
			for _, c := range torchChecks(l, tc.out, false, 0, 0) {
				got[c.Name] = c
			}
			if d := cmp.Diff(tc.wantDNN, got["cudnn.version"]); d != "" {
				t.Errorf("cudnn.version (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantNC, got["nccl.version"]); d != "" {
				t.Errorf("nccl.version (-want +got):\n%s", d)
			}
		})
	}
}
