package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
)

type firstStepOut struct {
	Probe         string   `json:"probe"`
	Device        string   `json:"device"`
	ImportSeconds float64  `json:"import_seconds"`
	StepSeconds   float64  `json:"step_seconds"`
	Files         []string `json:"files"`
	Error         string   `json:"error"`
}

// PullTimer is a Runtime that reports how long its pull took
// (Startup.PullSeconds).
type PullTimer interface {
	// PulledIn is the pull's (and unpack's) seconds, 0 before it ran.
	PulledIn() float64
}

// startup runs the firststep probe as the run's first call into the
// runtime, so that its time includes the pull.
func (r *runner) startup(ctx context.Context, gpu, withTorch bool) (*Startup, error) {
	device := "cuda"
	if !gpu {
		device = "cpu"
	}
	args := []string{"--device", device}
	if !withTorch {
		args = append(args, "--no-torch")
	}
	var out firstStepOut
	secs, err := r.exec(ctx, Probe{Name: "firststep", Script: "firststep.py", GPU: gpu, Args: args}, &out)
	if err != nil {
		return nil, fmt.Errorf("probe firststep: %w", err)
	}
	if out.Error != "" {
		return nil, errors.New(out.Error)
	}
	s := &Startup{Seconds: secs, ImportSeconds: out.ImportSeconds, StepSeconds: out.StepSeconds,
		Device: out.Device, Files: out.Files, FileCount: len(out.Files)}
	if p, ok := r.o.base.(PullTimer); ok {
		s.PullSeconds = p.PulledIn()
	}
	return s, nil
}

// firstStepCheck is the startup.first_step check of st, or of the error
// the firststep probe ended with.
func firstStepCheck(st *Startup, err error) Check {
	if err != nil {
		return Check{Name: CheckFirstStep, Status: Fail, Detail: err.Error()}
	}
	detail := fmt.Sprintf("pull %.2fs, import torch %.2fs, first matmul on %s %.2fs", st.PullSeconds, st.ImportSeconds, st.Device, st.StepSeconds)
	if st.Device == "none" {
		detail = fmt.Sprintf("pull %.2fs, the interpreter's start %.2fs (the lock has no torch)", st.PullSeconds, st.ImportSeconds)
	}
	return Check{Name: CheckFirstStep, Status: Pass, Seconds: st.Seconds, Value: fmt.Sprintf("%.2fs", st.Seconds),
		Detail: fmt.Sprintf("%s; %d files taken", detail, st.FileCount)}
}

// StartupFilesText is res.Startup.Files as `imagectl build
// --prioritized-files` reads them: a comment naming the image and the step,
// then one path per line.
func StartupFilesText(res *Result) string {
	var b strings.Builder
	if res.Startup == nil {
		return ""
	}
	step := fmt.Sprintf("import torch, a matmul on %s", res.Startup.Device)
	if res.Startup.Device == "none" {
		step = "the interpreter's start; the lock has no torch"
	}
	fmt.Fprintf(&b, "# the files %s's first step (%s) took, in order\n", cmp.Or(res.Image, res.Digest), step)
	for _, f := range res.Startup.Files {
		b.WriteString(f)
		b.WriteByte('\n')
	}
	return b.String()
}
