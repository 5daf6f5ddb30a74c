package release

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"imagectl/internal/verify"
)

// Metrics turns outcomes into Prometheus metrics: durations per stage, image
// sizes, delta bytes, verify results and promotion outcomes.
func Metrics(outcomes []Outcome) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	dur := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "imagectl_release_stage_duration_seconds",
		Help: "Wall time of each pipeline stage per image in the last release run.",
	}, []string{"image", "stage"})
	size := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "imagectl_image_size_bytes",
		Help: "Compressed size of the built image (config and layers).",
	}, []string{"image", "digest"})
	delta := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "imagectl_image_delta_bytes",
		Help: "Bytes in layers that differ from the previous release.",
	}, []string{"image"})
	checks := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "imagectl_verify_check",
		Help: "Verification check outcome: 1 pass, 0 fail, -1 skipped.",
	}, []string{"image", "check"})
	outcome := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "imagectl_release_success",
		Help: "1 when the image went through every stage, 0 when a stage failed (label stage).",
	}, []string{"image", "failed_stage"})
	reg.MustRegister(dur, size, delta, checks, outcome)
	for _, oc := range outcomes {
		for stage, d := range oc.Durations {
			dur.WithLabelValues(oc.Image, stage).Set(d.Seconds())
		}
		if oc.Digest != "" {
			size.WithLabelValues(oc.Image, oc.Digest).Set(float64(oc.Size))
			delta.WithLabelValues(oc.Image).Set(float64(oc.Delta))
		}
		if oc.Result != nil {
			for _, c := range oc.Result.Checks {
				v := 0.0
				switch c.Status {
				case verify.Pass:
					v = 1
				case verify.Skip:
					v = -1
				}
				checks.WithLabelValues(oc.Image, c.Name).Set(v)
			}
		}
		ok := 0.0
		if oc.Err == nil {
			ok = 1
		}
		outcome.WithLabelValues(oc.Image, oc.FailedStage).Set(ok)
	}
	return reg
}

// WriteTextfile writes the metrics for the node exporter's textfile
// collector (atomically: a temp file, then rename).
func WriteTextfile(path string, outcomes []Outcome) error {
	if err := prometheus.WriteToTextfile(path, Metrics(outcomes)); err != nil {
		return fmt.Errorf("writing metrics to %s: %w", path, err)
	}
	return nil
}

// Push sends the metrics to a Pushgateway under job "imagectl_release".
func Push(ctx context.Context, url string, outcomes []Outcome) error {
	if err := push.New(url, "imagectl_release").Gatherer(Metrics(outcomes)).PushContext(ctx); err != nil {
		return fmt.Errorf("pushing metrics to %s: %w", url, err)
	}
	return nil
}
