package scan

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"imagectl/internal/monitoring"
)

// RescanMetrics turns a daily re-scan that ended at now into Prometheus
// metrics (names and meanings: internal/monitoring): per promoted digest,
// today's active findings by severity and the new ones by severity and
// fixability; whether the re-scan went through (runErr nil, or only a
// *BreaksPolicyError: new findings are its result, not its failure) and
// when it ended. res may be partial: the digests scanned before runErr.
func RescanMetrics(res []Rescan, runErr error, now time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	labels := []string{"image", "month", "platform", "digest", "severity"}
	findings := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: monitoring.ScanFindings,
		Help: "Active (not VEX-suppressed) findings of the newest signed scan, by severity."}, labels)
	fresh := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: monitoring.ScanNewFindings,
		Help: "Active findings the daily re-scan found that the previous signed scan did not have, by severity and fixability."}, append(labels, "fixable"))
	success := prometheus.NewGauge(prometheus.GaugeOpts{Name: monitoring.RescanSuccess,
		Help: "1 when the last daily re-scan went through every release file, 0 when it stopped on an error."})
	ended := prometheus.NewGauge(prometheus.GaugeOpts{Name: monitoring.RescanTimestamp,
		Help: "When the last daily re-scan ended (Unix seconds)."})
	reg.MustRegister(findings, fresh, success, ended)
	for _, r := range res {
		for sev, n := range r.Severities {
			findings.WithLabelValues(r.Image, r.Month, r.Platform, r.Digest, sev).Set(float64(n))
		}
		for _, f := range r.New {
			if f.Suppressed != nil {
				continue
			}
			fresh.WithLabelValues(r.Image, r.Month, r.Platform, r.Digest, strings.ToLower(f.Severity), strconv.FormatBool(f.Fixable())).Inc()
		}
	}
	var be *BreaksPolicyError
	if runErr == nil || errors.As(runErr, &be) {
		success.Set(1)
	}
	ended.Set(float64(now.Unix()))
	return reg
}

// WriteRescanTextfile writes RescanMetrics to path for the node exporter's
// textfile collector (a temp file renamed over path).
func WriteRescanTextfile(path string, res []Rescan, runErr error, now time.Time) error {
	return monitoring.WriteTextfile(path, RescanMetrics(res, runErr, now))
}

// PushRescan replaces the metrics of job monitoring.JobRescan on the
// Pushgateway at url with RescanMetrics, with a timeout and retries of
// transient failures.
func PushRescan(ctx context.Context, url string, res []Rescan, runErr error, now time.Time) error {
	return monitoring.Push(ctx, url, monitoring.JobRescan, RescanMetrics(res, runErr, now))
}
