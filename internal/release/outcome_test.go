package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/verify"
)

var update = flag.Bool("update", false, "rewrite testdata/outcomes.json")

// TestOutcomeJSON pins the rows of imagectl release -o json: scripts and
// dashboards read them.
func TestOutcomeJSON(t *testing.T) {
	outcomes := []Outcome{{
		Image: "demo", Ref: "reg/staging/demo@sha256:aa", Digest: "sha256:aa", Previous: "sha256:bb",
		Size: 1234, Layers: 7, Changed: 2, Delta: 99,
		Result:    &verify.Result{Passed: true, Digest: "sha256:aa"},
		Platforms: []PlatformOutcome{{Platform: "linux/arm64", Digest: "sha256:cc", Size: 10, Layers: 3, Changed: 1, Delta: 5, Verify: "not verified"}},
		Promoted:  Promoted{Reference: "reg/rel/demo@sha256:aa", Tags: []string{"demo-2026.12", "demo"}, Changelog: "images/demo/changelog-demo-2026.12.md"},
		Done:      []string{StageLock, StageBuild},
		Resumed:   []string{StageSign},
		Durations: map[string]time.Duration{StageLock: 1500 * time.Millisecond, StageBuild: 2 * time.Second},
	}, {
		Image: "b", FailedStage: StageLock, Err: errors.New("b: lock: stale"),
	}}
	var got bytes.Buffer
	enc := json.NewEncoder(&got)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(outcomes); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "outcomes.json")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("json.Marshal(outcomes) (-want +got):\n%s", diff)
	}
}
