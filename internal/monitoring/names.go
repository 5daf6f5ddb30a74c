// Package monitoring is what a Prometheus and Grafana stack needs to watch
// the fleet imagectl's images run on and imagectl's own releases: the
// metric names (one set, used by the exposition writers in
// internal/release and internal/scan, by the alerting rules and by the
// dashboard), the rules for NVIDIA's dcgm-exporter and for imagectl's
// metrics, a PrometheusRule manifest for the Prometheus Operator, a Grafana
// dashboard, and the textfile-collector and Pushgateway writers.
//
// It is a leaf: client_golang and the YAML library, nothing of BuildKit,
// containerd or client-go (TestDeps).
package monitoring

import "sort"

// imagectl's own metrics. The release writes the imagectl_release_*,
// imagectl_image_* and imagectl_verify_* families (imagectl release
// --metrics-file / --pushgateway); the daily re-scan writes the
// imagectl_scan_* and imagectl_rescan_* families (imagectl scan releases
// --metrics-file / --pushgateway).
const (
	// ReleaseStageDuration is each stage's wall time per image in the last
	// release run, seconds; labels image, stage.
	ReleaseStageDuration = "imagectl_release_stage_duration_seconds"
	// ReleaseSuccess is 1 when an image went through every stage of the
	// last release run, 0 when a stage failed; labels image, failed_stage.
	ReleaseSuccess = "imagectl_release_success"
	// ReleaseTimestamp is when the image's newest release run succeeded,
	// Unix seconds; label image. Kept from the previous metrics file for an
	// image that failed this time, so its age keeps growing.
	ReleaseTimestamp = "imagectl_release_timestamp_seconds"
	// ImageSize is the built image's compressed size, bytes; labels image,
	// digest.
	ImageSize = "imagectl_image_size_bytes"
	// ImageDelta is the bytes in layers that differ from the previous
	// release; label image.
	ImageDelta = "imagectl_image_delta_bytes"
	// VerifyCheck is each verification check's outcome: 1 pass, 0 fail, -1
	// skipped; labels image, check.
	VerifyCheck = "imagectl_verify_check"
	// VerifyTimestamp is when the newest release's verification started,
	// Unix seconds; label image.
	VerifyTimestamp = "imagectl_verify_timestamp_seconds"
	// VerifyBusBandwidth is the verified NCCL all-reduce bus bandwidth,
	// bytes per second (Prometheus's base unit; the check reports GB/s);
	// label image. Absent on one GPU.
	VerifyBusBandwidth = "imagectl_verify_busbw_bytes_per_second"
	// VerifyCompileSeconds is the first compiled call's time of the
	// verification's torch.compile runs, seconds; labels image, cache
	// (cold, warm).
	VerifyCompileSeconds = "imagectl_verify_compile_seconds"
	// ScanFindings is the active (not VEX-suppressed) findings of the newest
	// signed scan of a promoted digest; labels image, month, platform,
	// digest, severity.
	ScanFindings = "imagectl_scan_findings"
	// ScanNewFindings is the active findings the daily re-scan found that
	// the previous signed scan did not have; labels image, month, platform,
	// digest, severity, fixable ("true" when a fixed version is known).
	ScanNewFindings = "imagectl_scan_new_findings"
	// RescanSuccess is 1 when the last daily re-scan went through every
	// release file, 0 when it stopped on an error (a policy broken by a new
	// finding is not an error of the re-scan).
	RescanSuccess = "imagectl_rescan_success"
	// RescanTimestamp is when the last daily re-scan ended, Unix seconds.
	RescanTimestamp = "imagectl_rescan_timestamp_seconds"
)

// NVIDIA dcgm-exporter's metric names (its default counters) that the rules
// and the dashboard use.
const (
	// DCGMGPUTemp is the GPU temperature, degrees C.
	DCGMGPUTemp = "DCGM_FI_DEV_GPU_TEMP"
	// DCGMGPUUtil is the GPU utilization, percent.
	DCGMGPUUtil = "DCGM_FI_DEV_GPU_UTIL"
	// DCGMFBUsed is the framebuffer memory used, MiB.
	DCGMFBUsed = "DCGM_FI_DEV_FB_USED"
	// DCGMFBFree is the framebuffer memory free, MiB.
	DCGMFBFree = "DCGM_FI_DEV_FB_FREE"
	// DCGMPowerUsage is the power draw, W.
	DCGMPowerUsage = "DCGM_FI_DEV_POWER_USAGE"
	// DCGMXIDErrors is the last XID error code (0: none).
	DCGMXIDErrors = "DCGM_FI_DEV_XID_ERRORS"
)

// Job names under which the metrics are pushed to a Pushgateway.
const (
	JobRelease = "imagectl_release"
	JobRescan  = "imagectl_rescan"
)

// ImagectlMetrics returns imagectl's metric names, sorted.
func ImagectlMetrics() []string {
	return sorted(ReleaseStageDuration, ReleaseSuccess, ReleaseTimestamp, ImageSize, ImageDelta,
		VerifyCheck, VerifyTimestamp, VerifyBusBandwidth, VerifyCompileSeconds,
		ScanFindings, ScanNewFindings, RescanSuccess, RescanTimestamp)
}

// DCGMMetrics returns the dcgm-exporter metric names the rules and the
// dashboard may use, sorted.
func DCGMMetrics() []string {
	return sorted(DCGMGPUTemp, DCGMGPUUtil, DCGMFBUsed, DCGMFBFree, DCGMPowerUsage, DCGMXIDErrors)
}

func sorted(s ...string) []string {
	sort.Strings(s)
	return s
}
