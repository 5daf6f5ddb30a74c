package verify

import "testing"

func TestCheckCategory(t *testing.T) {
	for name, want := range map[string]Category{
		CheckAllReduce: CategoryMeasurement, CheckAllReduceBusBW: CategoryMeasurement, CheckCompileCache: CategoryMeasurement,
		"driver.version": CategoryHost, "gpu.count": CategoryHost, "gpu.nvlink": CategoryHost,
		"torch.version": CategoryImage, "nccl.version": CategoryImage, "shm.size": CategoryImage,
		// Exact names, not substrings: a check merely named like one is not a measurement.
		"allreduce": CategoryImage, "compile": CategoryImage, "nccl.allreduce.extra": CategoryImage,
	} {
		if got := (Check{Name: name}).Category(); got != want {
			t.Errorf("Check{%q}.Category() = %q, want %q", name, got, want)
		}
	}
}

func TestResultSummary(t *testing.T) {
	if got := (*Result)(nil).Summary(); got != "-" {
		t.Errorf("nil Summary() = %q, want -", got)
	}
	r := &Result{Checks: []Check{
		{Name: "driver.version", Status: Pass, Value: "580.159.04"},
		{Name: "torch.version", Status: Fail, Value: "2.6.0"},
		{Name: CheckAllReduce, Status: Pass, Value: "8 on 2 GPUs"},
		{Name: CheckAllReduceBusBW, Status: Pass, Value: "310 GB/s"},
		{Name: CheckCompileCache, Status: Skip, Value: "x"},
		{Name: "gpu.mig", Status: Skip},
	}}
	want := "3 pass, 1 fail, 2 skip (nccl.allreduce=8 on 2 GPUs, nccl.allreduce.busbw=310 GB/s)"
	if got := r.Summary(); got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}
