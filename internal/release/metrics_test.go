package release

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"imagectl/internal/monitoring"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
)

func measured(image string, started time.Time) Outcome {
	return Outcome{
		Image: image, Digest: "sha256:" + strings.Repeat("b", 64), Size: 100, Delta: 10,
		Durations: map[string]time.Duration{StageBuild: 2 * time.Second},
		Result: &verify.Result{StartedAt: started, Checks: []verify.Check{
			{Name: "python", Status: verify.Pass},
			{Name: verify.CheckAllReduceBusBW, Status: verify.Pass, Value: "181.5 GB/s"},
			{Name: verify.CheckCompileCache, Status: verify.Pass, Value: "cold 41.20 s, warm 3.05 s"},
		}},
	}
}

// TestMetricsFile: a release run's metrics file holds, per image, when its
// newest release succeeded and was verified, the verified bus bandwidth
// and compile times; an image that failed this run keeps the release time
// of the file it replaces; promtool parses and lints the file; every name
// in it is one of internal/monitoring's (which the rules and the
// dashboard use).
func TestMetricsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "imagectl.prom")
	day1 := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	if err := WriteTextfile(path, []Outcome{measured("a", day1.Add(-time.Hour)), measured("b", day1.Add(-time.Hour))}, day1); err != nil {
		t.Fatal(err)
	}
	day2 := day1.AddDate(0, 1, 0)
	failed := Outcome{Image: "b", FailedStage: StageVerify, Err: errors.New("verification failed")}
	if err := WriteTextfile(path, []Outcome{measured("a", day2.Add(-time.Hour)), failed}, day2); err != nil {
		t.Fatal(err)
	}
	mfs := testenv.ParseMetrics(t, path)
	value := func(name string, labels ...string) (float64, bool) {
		for _, m := range mfs[name].GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			match := true
			for i := 0; i+1 < len(labels); i += 2 {
				match = match && got[labels[i]] == labels[i+1]
			}
			if match {
				return m.GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{monitoring.ReleaseTimestamp, []string{"image", "a"}, float64(day2.Unix())},
		{monitoring.ReleaseTimestamp, []string{"image", "b"}, float64(day1.Unix())}, // kept
		{monitoring.VerifyTimestamp, []string{"image", "a"}, float64(day2.Add(-time.Hour).Unix())},
		{monitoring.VerifyBusBandwidth, []string{"image", "a"}, 181.5e9},
		{monitoring.VerifyCompileSeconds, []string{"image", "a", "cache", "cold"}, 41.2},
		{monitoring.VerifyCompileSeconds, []string{"image", "a", "cache", "warm"}, 3.05},
		{monitoring.ReleaseSuccess, []string{"image", "b", "failed_stage", StageVerify}, 0},
		{monitoring.ReleaseSuccess, []string{"image", "a"}, 1},
	} {
		got, ok := value(tc.name, tc.labels...)
		if !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := value(monitoring.VerifyBusBandwidth, "image", "b"); ok {
		t.Errorf("%s{image=b} is set for an image whose verification failed this run", monitoring.VerifyBusBandwidth)
	}
	for name := range mfs {
		if !slices.Contains(monitoring.ImagectlMetrics(), name) {
			t.Errorf("the release writes %s, which is not in monitoring.ImagectlMetrics", name)
		}
	}
	testenv.CheckMetrics(t, path)
}

// TestMetricsFileUnreadable: an earlier metrics file that does not parse
// is an error, not silently replaced (its release times would be lost).
func TestMetricsFileUnreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "imagectl.prom")
	if err := os.WriteFile(path, []byte("imagectl_release_timestamp_seconds{image=\"a\" 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteTextfile(path, []Outcome{measured("a", time.Now())}, time.Now()); err == nil {
		t.Error("WriteTextfile replaced a metrics file it could not read")
	}
}
