package result

import (
	"fmt"
	"strings"
)

// The names of the checks that measure rather than compare: their Value
// is a number worth reporting (Result.Summary).
const (
	CheckAllReduce      = "nccl.allreduce"
	CheckAllReduceBusBW = "nccl.allreduce.busbw"
	CheckCompileCache   = "compile.cache"
	// CheckFirstStep is WithStartup's: from the runtime's first call (the
	// pull) to the end of the first matmul.
	CheckFirstStep = "startup.first_step"
)

// Category is what a check is about.
type Category string

const (
	// CategoryMeasurement: a timed run inside the image (the all-reduce
	// and its bus bandwidth, the compile cache).
	CategoryMeasurement Category = "measurement"
	// CategoryHost: the machine (driver, GPUs).
	CategoryHost Category = "host"
	// CategoryImage: what the image holds against its lock (Python, torch,
	// CUDA, cuDNN, NCCL, pip packages) and how it runs (shm, storage, the
	// init's fingerprint, ...).
	CategoryImage Category = "image"
)

var measurements = map[string]bool{CheckAllReduce: true, CheckAllReduceBusBW: true, CheckCompileCache: true, CheckFirstStep: true}

// Category is the check's category, by its exact name.
func (c Check) Category() Category {
	switch {
	case measurements[c.Name]:
		return CategoryMeasurement
	case strings.HasPrefix(c.Name, "driver.") || strings.HasPrefix(c.Name, "gpu."):
		return CategoryHost
	}
	return CategoryImage
}

// Summary counts the checks by status and names the measurements that
// passed with a value: "12 pass, 0 fail, 1 skip (nccl.allreduce=8 on 2
// GPUs, compile.cache=0.4s)". A nil result is "-".
func (r *Result) Summary() string {
	if r == nil {
		return "-"
	}
	var pass, fail, skip int
	var extra []string
	for _, c := range r.Checks {
		switch c.Status {
		case Pass:
			pass++
		case Fail:
			fail++
		case Skip:
			skip++
		}
		if c.Status == Pass && c.Category() == CategoryMeasurement && c.Value != "" {
			extra = append(extra, c.Name+"="+c.Value)
		}
	}
	s := fmt.Sprintf("%d pass, %d fail, %d skip", pass, fail, skip)
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}
