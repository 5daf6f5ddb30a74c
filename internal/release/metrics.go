package release

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"imagectl/internal/monitoring"
	"imagectl/internal/verify"
)

// Metrics turns outcomes into Prometheus metrics (names and meanings:
// internal/monitoring): durations per stage, image sizes, delta bytes,
// verification checks, when and with what bus bandwidth and compile times
// the newest release was verified, promotion outcomes, and when each image's
// newest release succeeded: now for an image that went through every stage,
// kept[image] (the value of an earlier metrics file) for one that did not,
// so that its age keeps growing while its releases fail.
func Metrics(outcomes []Outcome, now time.Time, kept map[string]float64) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	dur := gauge(monitoring.ReleaseStageDuration, "Wall time of each pipeline stage per image in the last release run.", "image", "stage")
	size := gauge(monitoring.ImageSize, "Compressed size of the built image (config and layers).", "image", "digest")
	delta := gauge(monitoring.ImageDelta, "Bytes in layers that differ from the previous release.", "image")
	checks := gauge(monitoring.VerifyCheck, "Verification check outcome: 1 pass, 0 fail, -1 skipped.", "image", "check")
	outcome := gauge(monitoring.ReleaseSuccess, "1 when the image went through every stage, 0 when a stage failed (label failed_stage).", "image", "failed_stage")
	released := gauge(monitoring.ReleaseTimestamp, "When the image's newest release succeeded (Unix seconds).", "image")
	verified := gauge(monitoring.VerifyTimestamp, "When the newest release's verification started (Unix seconds).", "image")
	busbw := gauge(monitoring.VerifyBusBandwidth, "Verified NCCL all-reduce bus bandwidth (bytes per second).", "image")
	compile := gauge(monitoring.VerifyCompileSeconds, "First compiled call of the verification's torch.compile runs, by cache (cold, warm).", "image", "cache")
	for _, oc := range outcomes {
		for stage, d := range oc.Durations {
			dur.WithLabelValues(oc.Image, stage).Set(d.Seconds())
		}
		if oc.Digest != "" {
			size.WithLabelValues(oc.Image, oc.Digest).Set(float64(oc.Size))
			delta.WithLabelValues(oc.Image).Set(float64(oc.Delta))
		}
		if r := oc.Result; r != nil {
			for _, c := range r.Checks {
				v := 0.0
				switch c.Status {
				case verify.Pass:
					v = 1
				case verify.Skip:
					v = -1
				}
				checks.WithLabelValues(oc.Image, c.Name).Set(v)
				if c.Status != verify.Pass {
					continue
				}
				var bw, cold, warm float64
				switch c.Name {
				case verify.CheckAllReduceBusBW:
					if _, err := fmt.Sscanf(c.Value, "%f GB/s", &bw); err == nil {
						busbw.WithLabelValues(oc.Image).Set(bw * 1e9)
					}
				case verify.CheckCompileCache:
					if _, err := fmt.Sscanf(c.Value, "cold %f s, warm %f s", &cold, &warm); err == nil {
						compile.WithLabelValues(oc.Image, "cold").Set(cold)
						compile.WithLabelValues(oc.Image, "warm").Set(warm)
					}
				}
			}
			if !r.StartedAt.IsZero() {
				verified.WithLabelValues(oc.Image).Set(float64(r.StartedAt.Unix()))
			}
		}
		ok := 0.0
		if oc.Err == nil {
			ok = 1
			released.WithLabelValues(oc.Image).Set(float64(now.Unix()))
		} else if ts, found := kept[oc.Image]; found {
			released.WithLabelValues(oc.Image).Set(ts)
		}
		outcome.WithLabelValues(oc.Image, oc.FailedStage).Set(ok)
	}
	return reg
}

// WriteMetrics writes the metrics of a release run that ended at now to
// the textfile at path (WriteTextfile) and pushes them to the Pushgateway
// at url (Push); an empty path or url is skipped. Both are tried: the
// error joins their failures.
func WriteMetrics(ctx context.Context, path, url string, outcomes []Outcome, now time.Time) error {
	var errs []error
	if path != "" {
		if err := WriteTextfile(path, outcomes, now); err != nil {
			errs = append(errs, fmt.Errorf("writing the metrics to %s: %w", path, err))
		}
	}
	if url != "" {
		if err := Push(ctx, url, outcomes, now); err != nil {
			errs = append(errs, fmt.Errorf("pushing the metrics to %s: %w", url, err))
		}
	}
	return errors.Join(errs...)
}

// WriteTextfile writes the metrics of a release run that ended at now for
// the node exporter's textfile collector (atomically: a temp file, then
// rename), keeping from the file it replaces the newest release time of the
// images that failed this run. An unreadable earlier file is an error: the
// ages it holds would be lost.
func WriteTextfile(path string, outcomes []Outcome, now time.Time) error {
	kept, err := releaseTimes(path)
	if err != nil {
		return err
	}
	return monitoring.WriteTextfile(path, Metrics(outcomes, now, kept))
}

// releaseTimes reads monitoring.ReleaseTimestamp by image from the metrics
// file at path; none when there is no file.
func releaseTimes(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the earlier metrics: %w", err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		return nil, fmt.Errorf("reading the earlier metrics %s: %w", path, err)
	}
	out := map[string]float64{}
	if mf := mfs[monitoring.ReleaseTimestamp]; mf != nil {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "image" && m.GetGauge() != nil {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out, nil
}

// Push replaces the metrics of job monitoring.JobRelease on the
// Pushgateway at url with this run's (ended at now), with a timeout and
// retries of transient failures. A Pushgateway keeps no release time of
// an image that failed this run: the textfile collector does.
func Push(ctx context.Context, url string, outcomes []Outcome, now time.Time) error {
	return monitoring.Push(ctx, url, monitoring.JobRelease, Metrics(outcomes, now, nil))
}
