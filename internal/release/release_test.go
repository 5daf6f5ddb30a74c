package release

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/spec"
	"imagectl/internal/verify"
)

// fakeStages records calls and fails where told.
type fakeStages struct {
	mu       sync.Mutex
	calls    []string
	failAt   map[string]map[string]error // image -> stage -> error
	signed   map[string]bool             // digest -> already signed
	verified map[string]bool             // digest -> already verified
	scans    bool                        // the scan stage runs
}

func (f *fakeStages) record(img, stage string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, img+":"+stage)
	return f.failAt[img][stage]
}

func digestFor(img string) name.Digest {
	d, err := name.NewDigest("127.0.0.1:5000/staging/" + img + "@sha256:" + strings.Repeat("a", 64))
	if err != nil {
		panic(err)
	}
	return d
}

func (f *fakeStages) Lock(_ context.Context, img spec.Image) (*lock.Lock, error) {
	return &lock.Lock{Name: img.Name}, f.record(img.Name, StageLock)
}
func (f *fakeStages) Build(_ context.Context, l *lock.Lock) (Built, error) {
	return Built{Digest: digestFor(l.Name), Size: 100, Layers: 5, ChangedLayers: 1, ChangedBytes: 7}, f.record(l.Name, StageBuild)
}
func (f *fakeStages) Signed(_ context.Context, _ *lock.Lock, d name.Digest) (bool, error) {
	return f.signed[d.Context().RepositoryStr()], nil
}
func (f *fakeStages) Sign(_ context.Context, l *lock.Lock, _ name.Digest) error {
	return f.record(l.Name, StageSign)
}
func (f *fakeStages) Verified(_ context.Context, l *lock.Lock, d name.Digest) (*verify.Result, error) {
	if f.verified[d.Context().RepositoryStr()] {
		return &verify.Result{Passed: true, Digest: d.DigestStr()}, nil
	}
	return nil, nil
}
func (f *fakeStages) Verify(_ context.Context, l *lock.Lock, d name.Digest) (*verify.Result, error) {
	err := f.record(l.Name, StageVerify)
	return &verify.Result{Passed: err == nil, Digest: d.DigestStr(), Checks: []verify.Check{{Name: "python", Status: verify.Pass}}}, err
}
func (f *fakeStages) Scans() bool { return f.scans }
func (f *fakeStages) Scan(_ context.Context, l *lock.Lock, _ name.Digest) error {
	return f.record(l.Name, StageScan)
}
func (f *fakeStages) Promote(_ context.Context, l *lock.Lock, d name.Digest) (Promoted, error) {
	return Promoted{Reference: "rel/" + l.Name + "@" + d.DigestStr(), Tags: []string{"t"}}, f.record(l.Name, StagePromote)
}

type verifyFailed struct{}

func (verifyFailed) Error() string { return "2 checks failed" }
func (verifyFailed) ExitCode() int { return exitcode.VerifyFailed }

func TestRun(t *testing.T) {
	imgs := []spec.Image{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	tests := []struct {
		name      string
		stages    *fakeStages
		wantCalls []string
		wantFail  map[string]string // image -> failed stage
		wantCode  int
	}{{
		name:   "all pass",
		stages: &fakeStages{},
		wantCalls: []string{
			"a:lock", "a:build", "a:sign", "a:verify", "a:promote",
			"b:lock", "b:build", "b:sign", "b:verify", "b:promote",
			"c:lock", "c:build", "c:sign", "c:verify", "c:promote",
		},
		wantFail: map[string]string{},
		wantCode: exitcode.OK,
	}, {
		name:   "verify fails for b only; a and c go on",
		stages: &fakeStages{failAt: map[string]map[string]error{"b": {StageVerify: verifyFailed{}}}},
		wantCalls: []string{
			"a:lock", "a:build", "a:sign", "a:verify", "a:promote",
			"b:lock", "b:build", "b:sign", "b:verify",
			"c:lock", "c:build", "c:sign", "c:verify", "c:promote",
		},
		wantFail: map[string]string{"b": StageVerify},
		wantCode: exitcode.VerifyFailed,
	}, {
		name: "resumed: a already signed and verified",
		stages: &fakeStages{
			signed:   map[string]bool{"staging/a": true},
			verified: map[string]bool{"staging/a": true},
			failAt:   map[string]map[string]error{"c": {StageLock: errors.New("lock is stale")}},
		},
		wantCalls: []string{
			"a:lock", "a:build", "a:promote",
			"b:lock", "b:build", "b:sign", "b:verify", "b:promote",
			"c:lock",
		},
		wantFail: map[string]string{"c": StageLock},
		wantCode: exitcode.Failure,
	}, {
		name:   "scan is a stage of its own: b's failure stops b before promote",
		stages: &fakeStages{scans: true, failAt: map[string]map[string]error{"b": {StageScan: errors.New("opening the database: stale")}}},
		wantCalls: []string{
			"a:lock", "a:build", "a:sign", "a:verify", "a:scan", "a:promote",
			"b:lock", "b:build", "b:sign", "b:verify", "b:scan",
			"c:lock", "c:build", "c:sign", "c:verify", "c:scan", "c:promote",
		},
		wantFail: map[string]string{"b": StageScan},
		wantCode: exitcode.Failure,
	}, {
		name: "resumed: the scan runs again",
		stages: &fakeStages{
			scans:    true,
			signed:   map[string]bool{"staging/a": true},
			verified: map[string]bool{"staging/a": true},
		},
		wantCalls: []string{
			"a:lock", "a:build", "a:scan", "a:promote",
			"b:lock", "b:build", "b:sign", "b:verify", "b:scan", "b:promote",
			"c:lock", "c:build", "c:sign", "c:verify", "c:scan", "c:promote",
		},
		wantFail: map[string]string{},
		wantCode: exitcode.OK,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Run(context.Background(), imgs, tc.stages, WithJobs(1))
			if got := exitcode.Code(err); got != tc.wantCode {
				t.Errorf("Run() exit code = %d (%v), want %d", got, err, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantCalls, tc.stages.calls); diff != "" {
				t.Errorf("stage calls (-want +got):\n%s", diff)
			}
			gotFail := map[string]string{}
			for _, oc := range out {
				if oc.FailedStage != "" {
					gotFail[oc.Image] = oc.FailedStage
					var se *StageError
					if !errors.As(oc.Err, &se) || se.Stage != oc.FailedStage {
						t.Errorf("%s: Err = %v, want a StageError naming %s", oc.Image, oc.Err, oc.FailedStage)
					}
				}
			}
			if diff := cmp.Diff(tc.wantFail, gotFail); diff != "" {
				t.Errorf("failed stages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunResumedStagesAreReported(t *testing.T) {
	f := &fakeStages{signed: map[string]bool{"staging/a": true}, verified: map[string]bool{"staging/a": true}}
	out, err := Run(context.Background(), []spec.Image{{Name: "a"}}, f)
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if diff := cmp.Diff([]string{StageSign, StageVerify}, out[0].Resumed); diff != "" {
		t.Errorf("Resumed (-want +got):\n%s", diff)
	}
	if out[0].Result == nil || !out[0].Result.Passed {
		t.Errorf("Result = %+v, want the existing passing result", out[0].Result)
	}
}

func TestRunScanStage(t *testing.T) {
	var events []string
	progress := func(e Event) {
		switch {
		case e.Start:
			events = append(events, e.Stage+" started")
		case e.Err != nil:
			events = append(events, e.Stage+" failed")
		}
	}
	f := &fakeStages{scans: true, failAt: map[string]map[string]error{"a": {StageScan: errors.New("stale database")}}}
	out, err := Run(context.Background(), []spec.Image{{Name: "a"}}, f, WithProgress(progress))
	if err == nil {
		t.Fatal("Run() = nil, want the scan's failure")
	}
	want := []string{"lock started", "build started", "sign started", "verify started", "scan started", "scan failed"}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("progress events (-want +got):\n%s", diff)
	}
	if _, ok := out[0].Durations[StageScan]; !ok || out[0].FailedStage != StageScan {
		t.Errorf("Outcome = %+v, want a scan duration and FailedStage %q", out[0], StageScan)
	}

	// Without a database there is no scan stage; with --no-promote neither.
	for _, f := range []*fakeStages{{}, {scans: true}} {
		opts := []Option{}
		if f.scans {
			opts = append(opts, WithPromote(false))
		}
		out, err := Run(context.Background(), []spec.Image{{Name: "a"}}, f, opts...)
		if err != nil || slices.Contains(out[0].Done, StageScan) || slices.Contains(f.calls, "a:"+StageScan) {
			t.Errorf("Run(scans %v) = %v, done %v, calls %v; want no scan stage", f.scans, err, out[0].Done, f.calls)
		}
	}
}

func TestRunParallelKeepsOrder(t *testing.T) {
	var imgs []spec.Image
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		imgs = append(imgs, spec.Image{Name: n})
	}
	out, err := Run(context.Background(), imgs, &fakeStages{}, WithJobs(3))
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	for i, oc := range out {
		if oc.Image != imgs[i].Name {
			t.Errorf("out[%d].Image = %q, want %q", i, oc.Image, imgs[i].Name)
		}
		if want := "rel/" + imgs[i].Name + "@sha256:" + strings.Repeat("a", 64); oc.Promoted.Reference != want {
			t.Errorf("out[%d].Promoted.Reference = %q, want %q", i, oc.Promoted.Reference, want)
		}
	}
}

func TestRunRejectsZeroJobs(t *testing.T) {
	_, err := Run(context.Background(), nil, &fakeStages{}, WithJobs(0))
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("Run(WithJobs(0)) = %v, want a usage error", err)
	}
}

func TestWriteTextfile(t *testing.T) {
	out, _ := Run(context.Background(), []spec.Image{{Name: "a"}, {Name: "b"}}, &fakeStages{
		failAt: map[string]map[string]error{"b": {StageVerify: verifyFailed{}}},
	})
	path := filepath.Join(t.TempDir(), "imagectl.prom")
	if err := WriteTextfile(path, out, time.Unix(1764806400, 0)); err != nil {
		t.Fatalf("WriteTextfile() = %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`imagectl_release_success{failed_stage="",image="a"} 1`,
		`imagectl_release_success{failed_stage="verify",image="b"} 0`,
		`imagectl_image_delta_bytes{image="a"} 7`,
		`imagectl_verify_check{check="python",image="a"} 1`,
		`imagectl_release_stage_duration_seconds{image="a",stage="build"}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics file lacks %q:\n%s", want, b)
		}
	}
}
