package monitoring

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// Thresholds are the alerting rules' parameters. Defaults returns the
// documented defaults; Params lists each with its name and meaning, which
// is what imagectl monitoring render turns into flags and
// docs/monitoring.md documents.
type Thresholds struct {
	// GPUHotCelsius: a GPU above it for GPUHotFor is hot (warning).
	GPUHotCelsius float64
	GPUHotFor     time.Duration
	// GPUCriticalCelsius: a GPU above it for GPUCriticalFor is critical.
	GPUCriticalCelsius float64
	GPUCriticalFor     time.Duration
	// GPUIdlePercent: a GPU below this utilization with more than
	// GPUIdleMemoryMiB of framebuffer in use for GPUIdleFor is allocated
	// but idle.
	GPUIdlePercent   float64
	GPUIdleMemoryMiB float64
	GPUIdleFor       time.Duration
	// FramebufferFullRatio: used / (used + free) above it for
	// FramebufferFullFor is nearly full.
	FramebufferFullRatio float64
	FramebufferFullFor   time.Duration
	// ReleaseStaleAge: an image whose newest release is older is stale.
	ReleaseStaleAge time.Duration
	// RescanStaleAge: a daily re-scan older than this did not run.
	RescanStaleAge time.Duration
}

// Defaults returns the thresholds the docs describe: 85 C for 5m (critical
// 90 C for 1m), idle below 5 % with more than 1024 MiB in use for 10m,
// framebuffer 95 % full for 15m, a release older than 35 days (the release
// is monthly), a re-scan older than 36h (it is daily).
func Defaults() Thresholds {
	return Thresholds{
		GPUHotCelsius:        85,
		GPUHotFor:            5 * time.Minute,
		GPUCriticalCelsius:   90,
		GPUCriticalFor:       time.Minute,
		GPUIdlePercent:       5,
		GPUIdleMemoryMiB:     1024,
		GPUIdleFor:           10 * time.Minute,
		FramebufferFullRatio: 0.95,
		FramebufferFullFor:   15 * time.Minute,
		ReleaseStaleAge:      35 * 24 * time.Hour,
		RescanStaleAge:       36 * time.Hour,
	}
}

// Param is one threshold: exactly one of Number and Duration is set, and
// points into the Thresholds that Params was called on.
type Param struct {
	Name     string
	Help     string
	Number   *float64
	Duration *time.Duration
}

// Params lists t's thresholds by name (the render command's flags), in a
// stable order.
func (t *Thresholds) Params() []Param {
	return []Param{
		{Name: "gpu-hot-celsius", Help: "GPUHot fires above this temperature (C)", Number: &t.GPUHotCelsius},
		{Name: "gpu-hot-for", Help: "how long a GPU stays above gpu-hot-celsius before GPUHot fires", Duration: &t.GPUHotFor},
		{Name: "gpu-critical-celsius", Help: "GPUTemperatureCritical fires above this temperature (C)", Number: &t.GPUCriticalCelsius},
		{Name: "gpu-critical-for", Help: "how long a GPU stays above gpu-critical-celsius before GPUTemperatureCritical fires", Duration: &t.GPUCriticalFor},
		{Name: "gpu-idle-percent", Help: "GPUAllocatedIdle fires below this utilization (%)", Number: &t.GPUIdlePercent},
		{Name: "gpu-idle-memory-mib", Help: "GPUAllocatedIdle needs more than this framebuffer memory in use (MiB)", Number: &t.GPUIdleMemoryMiB},
		{Name: "gpu-idle-for", Help: "how long a GPU stays idle with memory in use before GPUAllocatedIdle fires", Duration: &t.GPUIdleFor},
		{Name: "framebuffer-full-ratio", Help: "GPUFramebufferNearlyFull fires above this used/(used+free) ratio (0-1)", Number: &t.FramebufferFullRatio},
		{Name: "framebuffer-full-for", Help: "how long the framebuffer stays above the ratio before GPUFramebufferNearlyFull fires", Duration: &t.FramebufferFullFor},
		{Name: "release-stale-age", Help: "ImagectlReleaseStale fires when an image's newest release is older than this", Duration: &t.ReleaseStaleAge},
		{Name: "rescan-stale-age", Help: "ImagectlRescanNotRun fires when the last daily re-scan is older than this", Duration: &t.RescanStaleAge},
	}
}

// Validate refuses thresholds no rule can use: a negative duration or
// number, a ratio outside (0, 1], a critical temperature below the hot
// one, a stale age under a minute.
func (t Thresholds) Validate() error {
	for _, p := range t.Params() {
		switch {
		case p.Number != nil && *p.Number < 0:
			return fmt.Errorf("%s is %v: want a number >= 0", p.Name, *p.Number)
		case p.Duration != nil && *p.Duration < 0:
			return fmt.Errorf("%s is %s: want a duration >= 0", p.Name, *p.Duration)
		}
	}
	switch {
	case t.FramebufferFullRatio <= 0 || t.FramebufferFullRatio > 1:
		return fmt.Errorf("framebuffer-full-ratio is %v: want a ratio in (0, 1]", t.FramebufferFullRatio)
	case t.GPUCriticalCelsius < t.GPUHotCelsius:
		return fmt.Errorf("gpu-critical-celsius %v is below gpu-hot-celsius %v", t.GPUCriticalCelsius, t.GPUHotCelsius)
	case t.ReleaseStaleAge < time.Minute || t.RescanStaleAge < time.Minute:
		return fmt.Errorf("release-stale-age %s and rescan-stale-age %s: want a minute or more", t.ReleaseStaleAge, t.RescanStaleAge)
	}
	return nil
}

// promDuration writes d as Prometheus does (1h30m, 5m, 35d).
func promDuration(d time.Duration) string { return model.Duration(d).String() }
