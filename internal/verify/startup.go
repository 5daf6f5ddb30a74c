package verify

import (
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

// pullTimer is a runtime that reports how long its pull took.
type pullTimer interface {
	PulledIn() float64
}

// PulledIn implements pullTimer.
func (r *Containerd) PulledIn() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.PullSeconds
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
	if p, ok := r.o.runtime.(pullTimer); ok {
		s.PullSeconds = p.PulledIn()
	}
	return s, nil
}

// StartupFilesText is res.Startup.Files as `imagectl build
// --prioritized-files` reads them: a comment naming the image and the step,
// then one path per line.
func StartupFilesText(res *Result) string {
	var b strings.Builder
	if res.Startup == nil {
		return ""
	}
	fmt.Fprintf(&b, "# the files %s's first step (import torch, a matmul on %s) took, in order\n", firstNonEmpty(res.Image, res.Digest), res.Startup.Device)
	for _, f := range res.Startup.Files {
		b.WriteString(f)
		b.WriteByte('\n')
	}
	return b.String()
}
