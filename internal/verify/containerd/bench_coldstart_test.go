package containerd

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/build"
	"imagectl/internal/testenv"
	"imagectl/internal/verify"
	"imagectl/internal/verify/verifytest"
)

// BenchmarkColdStart (make bench: hack/bench/coldstart.sh) times the demo
// image's first step from a cold containerd, the way `imagectl verify
// --startup` does: the pull (gzip layers, unpacked by overlayfs) or the
// lazy mount (the same image rewritten as eStargz, stargz-snapshotter),
// then the interpreter's start in a fresh container. Each iteration deletes
// the image synchronously (containerd's GC removes its content and
// snapshots), so every pull is cold. Reports full-s/op, lazy-s/op and their
// ratio, lazy/full, and the full pull with its layers unpacked one at a
// time (full-seq-s/op; full/full-seq is what parallel unpack saves), from one
// interleaved run.
func BenchmarkColdStart(b *testing.B) {
	e := testenv.Get(b)
	c := stargzContainerd(b, e)
	ctx := context.Background()
	gz, _, l := verifytest.PushedDemo(b, e, "bench-coldstart")
	lazy, _, err := build.RewriteEstargz(ctx, gz, nil)
	if err != nil {
		b.Fatal(err)
	}
	ns := "bench-coldstart-" + verify.RandomHex(4)
	first := func(ref name.Digest, snap string, unpacks int) time.Duration {
		rt, err := New(ref, WithAddress(e.Containerd), WithNamespace(ns), WithSnapshotter(snap), WithShmBytes(verify.ShmBytes(l)),
			WithUnpackConcurrency(unpacks))
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		t := time.Now()
		out, err := rt.Exec(ctx, verify.Probe{Name: "firststep", Script: "firststep.py", Args: []string{"--device", "cpu", "--no-torch"}})
		d := time.Since(t)
		var fs struct {
			Files []string `json:"files"`
		}
		if err == nil {
			last := bytes.TrimSpace(out)
			err = json.Unmarshal(last[bytes.LastIndexByte(last, '\n')+1:], &fs)
		}
		if err != nil || len(fs.Files) == 0 {
			b.Fatalf("first step of %s on %s: %v (%d files)", ref, snap, err, len(fs.Files))
		}
		if err := c.ImageService().Delete(namespaces.WithNamespace(ctx, ns), ref.String(), images.SynchronousDelete()); err != nil {
			b.Fatalf("deleting %s: %v", ref, err)
		}
		return d
	}
	var full, seq, lz time.Duration
	b.ResetTimer()
	for range b.N {
		full += first(gz, "overlayfs", DefaultUnpackConcurrency)
		seq += first(gz, "overlayfs", 1)
		lz += first(lazy, "stargz", DefaultUnpackConcurrency)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(full.Seconds()/n, "full-s/op")
	b.ReportMetric(seq.Seconds()/n, "full-seq-s/op")
	b.ReportMetric(lz.Seconds()/n, "lazy-s/op")
	b.ReportMetric(full.Seconds()/seq.Seconds(), "full/full-seq")
	b.ReportMetric(lz.Seconds()/full.Seconds(), "lazy/full")
}
