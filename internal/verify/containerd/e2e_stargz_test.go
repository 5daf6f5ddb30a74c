package containerd

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/build"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
	"imagectl/internal/verify/verifytest"
)

// TestStargzE2E pulls eStargz images lazily through the stargz-snapshotter
// `make up` started (containerd's proxy plugin "stargz", over /dev/fuse):
// the demo image rewritten with eStargz layers mounts from the registry
// (the layers are FUSE mounts, not unpacked), the whole verification
// passes on it with the startup timed and its files recorded, and the image
// rewritten with those files first (what `imagectl build
// --prioritized-files` does) verifies again, lazily too.
func TestStargzE2E(t *testing.T) {
	e := testenv.Get(t)
	stargzContainerd(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ns := "stargz-e2e-" + verify.RandomHex(4)

	gz, _, l := verifytest.PushedDemo(t, e, "verify-e2e-stargz")
	l.Verify.CPUOnly = true
	lazy, rep, err := build.RewriteEstargz(ctx, gz, nil)
	if err != nil || rep.Layers == 0 {
		t.Fatalf("RewriteEstargz(%s) = %+v, %v", gz, rep, err)
	}
	run := func(ref name.Digest) *verify.Result {
		t.Helper()
		rt, err := New(ref, WithAddress(e.Containerd), WithNamespace(ns), WithSnapshotter("stargz"), WithShmBytes(verify.ShmBytes(l)))
		if err != nil {
			t.Fatal(err)
		}
		res, err := verify.Run(ctx, l, verify.WithImage(ref), verify.WithRuntime(rt), verify.WithStartup(true))
		if err != nil {
			if res != nil {
				for _, c := range res.Checks {
					t.Logf("%s %s %s %s", c.Name, c.Status, c.Value, c.Detail)
				}
			}
			t.Fatalf("Run(%s) lazily = %v, want it to pass", ref, err)
		}
		if res.Startup == nil || res.Startup.FileCount == 0 || res.Proof != verify.ProofRuntime {
			t.Fatalf("Run(%s) startup %+v proof %q: want files recorded and the runtime's proof", ref, res.Startup, res.Proof)
		}
		return res
	}

	res := run(lazy)
	if n := fuseMounts(t); n == 0 {
		t.Errorf("no FUSE mount of stargz-snapshotter after the lazy pull: the layers were unpacked, not mounted")
	}
	t.Logf("lazy: %s; %d files (%s ...)", res.Startup.Files[0], res.Startup.FileCount, res.Summary())
	var py bool
	for _, f := range res.Startup.Files {
		py = py || strings.Contains(f, "python3")
	}
	if !py {
		t.Errorf("startup files %v: want the interpreter's files among them", res.Startup.Files)
	}

	prio, rep, err := build.RewriteEstargz(ctx, lazy, res.Startup.Files)
	if err != nil || rep.Files == 0 || rep.Layers == 0 {
		t.Fatalf("RewriteEstargz(%s, %d files) = %+v, %v; want the recorded files put first", lazy, res.Startup.FileCount, rep, err)
	}
	t.Logf("prioritized: %d layers rewritten, %d files first, %d missing", rep.Layers, rep.Files, rep.Missing)
	run(prio)
}

// stargzContainerd connects to the containerd `make up` started and checks
// it has the stargz snapshotter (a proxy plugin over /dev/fuse). It skips
// without /dev/fuse; without containerd or the snapshotter it fails the test
// under IMAGECTL_E2E=1 and skips it otherwise. The client closes with t.
func stargzContainerd(t testing.TB, e testenv.Env) *containerd.Client {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: stargz-snapshotter mounts layers over FUSE")
	}
	c, err := containerd.New(e.ContainerdSocket(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := namespaces.WithNamespace(context.Background(), "stargz-check")
	if err := c.SnapshotService("stargz").Walk(ctx, func(context.Context, snapshots.Info) error { return nil }); err != nil {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatalf("containerd has no stargz snapshotter (%v): hack/containerd.sh starts bin/containerd-stargz-grpc (hack/tools.sh stargz) where /dev/fuse exists", err)
		}
		t.Skipf("containerd has no stargz snapshotter: %v", err)
	}
	return c
}

// fuseMounts counts the FUSE mounts stargz-snapshotter holds.
func fuseMounts(t *testing.T) int {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && strings.HasPrefix(f[2], "fuse") && strings.Contains(f[1], "stargz") {
			n++
		}
	}
	return n
}
