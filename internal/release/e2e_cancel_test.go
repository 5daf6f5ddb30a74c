package release

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	controlapi "github.com/moby/buildkit/api/services/control"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/releasefile"
	"imagectl/internal/scan/scantest"
)

// cancelBudget is how long imagectl may take to exit after SIGINT.
const cancelBudget = 2 * time.Second

// cancelDemo is the demo spec, written with repositories of the test's own,
// and the imagectl command lines that lock, build and release it; every run
// gets a TMPDIR and a containerd namespace of its own, checked empty after.
type cancelDemo struct {
	dr       *demoRelease
	spec     string
	vars     []string
	tmp, ns  string
	db       string // the vulnerability database the releases scan with
	imagectl string
}

func newCancelDemo(t *testing.T, ctx context.Context) *cancelDemo {
	t.Helper()
	dr := newDemoRelease(t, ctx, "e2e-cancel", 1<<20)
	src, err := os.ReadFile(filepath.Join(dr.env.Root, "specs", "demo.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	staging := strings.TrimPrefix(dr.imgs[0].Repos.Staging, dr.env.Registry+"/")
	rel := strings.TrimPrefix(dr.imgs[0].Repos.Release, dr.env.Registry+"/")
	hcl := strings.NewReplacer("${var.registry}/imagectl/staging/demo", "${var.registry}/"+staging,
		"${var.registry}/imagectl/demo", "${var.registry}/"+rel).Replace(string(src))
	if !strings.Contains(hcl, staging) || !strings.Contains(hcl, rel) {
		t.Fatalf("specs/demo.hcl no longer names its repositories as this test expects:\n%s", src)
	}
	dir := t.TempDir()
	cd := &cancelDemo{dr: dr, spec: filepath.Join(dir, "demo.hcl"),
		vars:     []string{"--var", "registry=" + dr.env.Registry, "--var", "wheel_index=" + dr.index.URL},
		tmp:      filepath.Join(dir, "tmp"),
		db:       scantest.BuildDB(t, time.Time{}, scantest.JQ),
		ns:       fmt.Sprintf("imagectl-e2e-cancel-%d", time.Now().UnixNano()),
		imagectl: filepath.Join(dr.env.Bin, "imagectl")}
	if err := os.WriteFile(cd.spec, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(cd.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	return cd
}

func (cd *cancelDemo) lockArgs() []string {
	return append([]string{"-v", "lock", cd.spec, "--dir", cd.dr.images}, cd.vars...)
}

func (cd *cancelDemo) buildArgs() []string {
	return []string{"-v", "build", "--lock", lock.Path(cd.dr.images, "demo"), "--push", "--progress", "plain",
		"--init", filepath.Join(cd.dr.env.Bin, "imagectl-init"), "--addr", cd.dr.env.BuildkitHost}
}

func (cd *cancelDemo) releaseArgs() []string {
	k := cd.dr.keys
	return append([]string{"-v", "release", cd.spec, "--image", "demo", "--images-dir", cd.dr.images, "--lock-missing",
		"--key", k.signKey, "--pub", k.signPub, "--verifier-key", k.verKey, "--verifier-pub", k.verPub,
		"--verify-runtime", "containerd", "--containerd-address", cd.dr.env.Containerd, "--require-container-runtime",
		"--month", "2026-11", "--progress", "plain", "--addr", cd.dr.env.BuildkitHost,
		"--init", filepath.Join(cd.dr.env.Bin, "imagectl-init"), "--db", cd.db}, cd.vars...)
}

// run is one imagectl run, interrupted or not.
type run struct {
	code           int
	stderr, stdout string
	signalled      time.Time // the first SIGINT; zero when none was sent
	second         time.Time // the second SIGINT, if sent
	exited         time.Time
	refs           []string // the BuildKit refs of its solves (its -v log)
}

var refRE = regexp.MustCompile(`\bref=([a-z0-9]+)`)

// interrupt runs imagectl with args and sends it SIGINT when a line of its
// stderr matches the regular expression at; with twice, a second SIGINT 100 ms after the first
// (two at once would be one pending signal). An empty at sends nothing.
func (cd *cancelDemo) interrupt(t *testing.T, ctx context.Context, at string, twice bool, args ...string) run {
	t.Helper()
	atRE := regexp.MustCompile(at)
	cmd := exec.CommandContext(ctx, cd.imagectl, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+cd.tmp, "CONTAINERD_NAMESPACE="+cd.ns,
		"IMAGECTL_SIGNING_PASSWORD="+string(e2ePassword), "COSIGN_PASSWORD="+string(e2ePassword))
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var r run
	var stderr strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			stderr.WriteString(line + "\n")
			for _, m := range refRE.FindAllStringSubmatch(line, -1) {
				r.refs = append(r.refs, m[1])
			}
			if at != "" && r.signalled.IsZero() && atRE.MatchString(line) {
				r.signalled = time.Now()
				_ = cmd.Process.Signal(syscall.SIGINT)
				if twice {
					time.AfterFunc(100*time.Millisecond, func() {
						r.second = time.Now()
						_ = cmd.Process.Signal(syscall.SIGINT)
					})
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Wait()
	r.exited = time.Now()
	pw.Close()
	<-scanned
	r.stderr, r.stdout = stderr.String(), stdout.String()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("imagectl %s: %v", strings.Join(args, " "), err)
	}
	if at != "" && r.signalled.IsZero() {
		t.Fatalf("imagectl %s ended (exit %d) before a line matching %q:\n%s", strings.Join(args, " "), r.code, at, r.stderr)
	}
	return r
}

// checkInterrupted: exit 130 within cancelBudget of the SIGINT, the
// signal named, and nothing left behind (checkClean).
func (cd *cancelDemo) checkInterrupted(t *testing.T, ctx context.Context, r run) {
	t.Helper()
	took := r.exited.Sub(r.signalled)
	if r.code != exitcode.Interrupted {
		t.Errorf("exit %d after SIGINT, want %d; stderr:\n%s", r.code, exitcode.Interrupted, r.stderr)
	}
	if took > cancelBudget {
		t.Errorf("exited %v after SIGINT, want within %v; stderr:\n%s", took.Round(time.Millisecond), cancelBudget, r.stderr)
	}
	if !strings.Contains(r.stderr, "imagectl: interrupted by SIGINT") {
		t.Errorf("stderr does not say it was interrupted by SIGINT:\n%s", r.stderr)
	}
	t.Logf("exit %d %v after SIGINT", r.code, took.Round(time.Millisecond))
	cd.checkClean(t, ctx, r)
}

// checkClean: no solve of the run still active in buildkitd, no container,
// task or active snapshot in the run's containerd namespace, no network
// namespace mounted under its TMPDIR, and its TMPDIR empty.
func (cd *cancelDemo) checkClean(t *testing.T, ctx context.Context, r run) {
	t.Helper()
	for _, ref := range r.refs {
		if rec := activeBuild(t, ctx, cd.dr, ref); rec != nil {
			t.Errorf("buildkitd still runs the build %s (created %v) after imagectl exited", ref, rec.CreatedAt.AsTime())
		}
	}
	for _, l := range hostLeftovers(t, ctx, cd.dr.env.Containerd, cd.ns, cd.tmp) {
		t.Errorf("left after imagectl exited: %s", l)
	}
	if es, err := os.ReadDir(cd.tmp); err != nil || len(es) > 0 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("TMPDIR %s holds %v (%v), want it empty", cd.tmp, names, err)
	}
}

// hostLeftovers lists what a verification through containerd left on the
// host: containers, tasks and active snapshots in the containerd namespace
// ns, mounts under tmp (a network namespace) and the runtime's folders in
// tmp (probes, storage, network namespaces).
func hostLeftovers(t *testing.T, ctx context.Context, address, ns, tmp string) []string {
	t.Helper()
	c, err := containerd.New(address, containerd.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var left []string
	nctx := namespaces.WithNamespace(ctx, ns)
	cs, err := c.Containers(nctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range cs {
		left = append(left, "container "+x.ID())
	}
	ts, err := c.TaskService().List(nctx, &tasks.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts.GetTasks() {
		left = append(left, "task "+x.ID)
	}
	err = c.SnapshotService("overlayfs").Walk(nctx, func(_ context.Context, i snapshots.Info) error {
		if i.Kind == snapshots.KindActive {
			left = append(left, "active snapshot "+i.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		if strings.Contains(line, tmp+"/") {
			left = append(left, "mount "+line)
		}
	}
	es, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		for _, p := range []string{"imagectl-probes-", "imagectl-storage-", "imagectl-netns-"} {
			if strings.HasPrefix(e.Name(), p) {
				left = append(left, "folder "+filepath.Join(tmp, e.Name()))
			}
		}
	}
	return left
}

// activeBuild is buildkitd's record of the build ref while it is active,
// nil once it is not (allowing buildkitd a moment to finish cancelling).
func activeBuild(t *testing.T, ctx context.Context, dr *demoRelease, ref string) *controlapi.BuildHistoryRecord {
	t.Helper()
	var rec *controlapi.BuildHistoryRecord
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rec = nil
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		stream, err := dr.c.ControlClient().ListenBuildHistory(hctx, &controlapi.BuildHistoryRequest{Ref: ref, ActiveOnly: true, EarlyExit: true})
		if err != nil {
			cancel()
			t.Fatalf("asking buildkitd for build %s: %v", ref, err)
		}
		for {
			ev, err := stream.Recv()
			if err != nil {
				break
			}
			if ev.Record != nil && ev.Record.Ref == ref && ev.Record.CompletedAt == nil {
				rec = ev.Record
			}
		}
		cancel()
		if rec == nil || time.Now().After(deadline) {
			return rec
		}
	}
}

// TestE2ECancel interrupts imagectl with SIGINT during each stage of the
// demo's release (lock, build, sign, verify in containerd, scan with a
// test vulnerability database, promote) and
// `imagectl build` on its own: each run exits 130 within 2 s and leaves no
// BuildKit build running, no container, task or netns, no temp file; a
// second SIGINT exits at once; a rerun after the interruptions releases.
func TestE2ECancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cd := newCancelDemo(t, ctx)
	lockPath := lock.Path(cd.dr.images, "demo")

	t.Run("lock", func(t *testing.T) {
		r := cd.interrupt(t, ctx, "lock step solving", false, cd.lockArgs()...)
		cd.checkInterrupted(t, ctx, r)
		if len(r.refs) == 0 {
			t.Errorf("no BuildKit ref in the lock's log:\n%s", r.stderr)
		}
		if _, err := os.Stat(lockPath); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("an interrupted lock left %s (%v), want none", lockPath, err)
		}
	})
	t.Run("lock, second SIGINT", func(t *testing.T) {
		// The second SIGINT counts when it lands during the first one's
		// clean-up (ending the cancelled solve: up to a second); when
		// buildkitd ended the solve sooner, imagectl was gone before it
		// (TestNotifyFirstSignalCancelsSecondExits covers the mechanism).
		r := cd.interrupt(t, ctx, "lock step solving", true, cd.lockArgs()...)
		if r.code != exitcode.Interrupted {
			t.Errorf("exit %d after two SIGINTs, want %d; stderr:\n%s", r.code, exitcode.Interrupted, r.stderr)
		}
		switch {
		case r.second.IsZero() || r.second.After(r.exited):
			t.Logf("imagectl exited %v after the first SIGINT, before the second", r.exited.Sub(r.signalled).Round(time.Millisecond))
		case !strings.Contains(r.stderr, "again: exiting at once"):
			t.Errorf("the second SIGINT did not end imagectl at once; stderr:\n%s", r.stderr)
		case r.exited.Sub(r.second) > 500*time.Millisecond:
			t.Errorf("exited %v after the second SIGINT, want at once", r.exited.Sub(r.second))
		default:
			t.Logf("exit %d %v after the second SIGINT", r.code, r.exited.Sub(r.second).Round(time.Millisecond))
		}
		// Clean-ups were cut short: what is left is buildkitd's to end.
		for _, ref := range r.refs {
			waitInactive(t, ctx, cd.dr, ref)
		}
		os.RemoveAll(cd.tmp)
		if err := os.Mkdir(cd.tmp, 0o755); err != nil {
			t.Fatal(err)
		}
	})
	if r := cd.interrupt(t, ctx, "", false, cd.lockArgs()...); r.code != 0 {
		t.Fatalf("imagectl lock after the interrupted ones: exit %d\n%s", r.code, r.stderr)
	}
	t.Run("build", func(t *testing.T) {
		// Any fetch vertex, under whichever name: buildkitd merges a
		// vertex with the same digest solved at once by another client
		// (the lock package's e2e tests fetch the same debs), and shows
		// that client's name ("pip resolve: fetch jq ..."), not "fetch deb".
		r := cd.interrupt(t, ctx, `^#\d+ (.*: )?fetch `, false, cd.buildArgs()...)
		cd.checkInterrupted(t, ctx, r)
		if len(r.refs) == 0 {
			t.Errorf("no BuildKit ref in the build's log:\n%s", r.stderr)
		}
	})
	for _, tc := range []struct{ stage, at string }{
		{StageSign, "==> demo: " + StageSign},
		{StageVerify, "image pulled and unpacked into containerd"},
		{StageScan, "==> demo: " + StageScan},
		{StagePromote, "==> demo: " + StagePromote},
	} {
		t.Run("release "+tc.stage, func(t *testing.T) {
			r := cd.interrupt(t, ctx, tc.at, false, cd.releaseArgs()...)
			cd.checkInterrupted(t, ctx, r)
			if !strings.Contains(r.stdout, tc.stage) {
				t.Errorf("the release table does not name %s as the stage cut short:\n%s", tc.stage, r.stdout)
			}
		})
	}
	r := cd.interrupt(t, ctx, "", false, cd.releaseArgs()...)
	if r.code != 0 {
		t.Fatalf("release after the interrupted ones: exit %d\n%s", r.code, r.stderr)
	}
	cd.checkClean(t, ctx, r)
	rf, err := releasefile.ReadFile(filepath.Join(cd.dr.images, "demo", releasefile.FileName))
	if err != nil || len(rf.Releases) != 1 {
		t.Fatalf("release file = %+v, %v; want one release", rf, err)
	}
	tag, err := name.NewTag(cd.dr.imgs[0].Repos.Release + ":demo-2026.11")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Head(tag, remote.WithContext(ctx)); err != nil {
		t.Errorf("release tag %s: %v", tag, err)
	}
}

// waitInactive waits up to 10 s for buildkitd to end the build ref.
func waitInactive(t *testing.T, ctx context.Context, dr *demoRelease, ref string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); activeBuild(t, ctx, dr, ref) != nil; {
		if time.Now().After(deadline) {
			t.Errorf("buildkitd still runs build %s 10 s after imagectl exited", ref)
			return
		}
	}
}
