package build

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/client/llb"
)

// TestE2EBuildKitDiffRecordTakenForPulledRoot is the minimal reproduction
// of the BuildKit defect behind docs/build.md's "Downstream builds on the
// builder that built the image", kept as a test that documents it.
//
// An image made as llb.Merge(base, llb.Diff(base, step)), where step is one
// RUN on base, is exported; its top layer is the step's own blob. The
// exporter gives the diff record the step's chain IDs ("re-using upper
// blob" in cache/blobs.go computeChainMetadata), yet the diff's snapshot
// holds only the step's changes. A later pull of that image on the same
// buildkitd looks its top layer up by blob chain (cache.GetByBlob) and
// takes the first record indexed there: the step's record (its snapshot is
// base + step), the merge's, or the diff's. With the diff's, the pulled
// image's root is the top layer alone: no /bin, no /etc.
//
// The same step exported as a plain chain (no diff, no merge), which is how
// imagectl builds its layers, pulls complete every time; the test checks
// that too. When BuildKit stops taking diff records for pulled layers, the
// defect check fails: then the note in docs/build.md and this test go.
func TestE2EBuildKitDiffRecordTakenForPulledRoot(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	base := e.base.Pull()
	repo := e.env.Registry + "/imagectl/test/" + uniq("buildkit-diff")
	const marker = "imagectl-repro"

	// step is one RUN on the base, new every time (a nonce), so that each
	// export makes records the puller has not seen.
	step := func(b llb.State) llb.State {
		return b.Run(
			llb.Args([]string{"/bin/sh", "-c", "echo " + uniq("run") + " > /" + marker}),
			llb.AddEnv("PATH", systemPath),
		).Root()
	}
	// pulledRoot lists the root of ref as buildkitd pulls it: mounted
	// read-only in a step on the base (a step whose own root is the pulled
	// image cannot even start when the defect hits).
	pulledRoot := func(t *testing.T, ref string) []string {
		t.Helper()
		st := llb.Image(base, llb.Platform(platform)).Run(
			llb.Args([]string{"/bin/sh", "-c", "mkdir /out && ls -A /pulled > /out/ls"}),
			llb.AddEnv("PATH", systemPath),
			llb.AddMount("/pulled", llb.Image(ref, llb.Platform(platform)), llb.Readonly),
		).Root()
		out, err := solveLocal(ctx, e.c, st, "/out")
		if err != nil {
			t.Fatalf("listing the root of %s as pulled: %v", ref, err)
		}
		return strings.Fields(out["ls"])
	}
	complete := func(root []string) bool {
		return slices.Contains(root, "bin") && slices.Contains(root, "etc") && slices.Contains(root, marker)
	}
	push := func(t *testing.T, st llb.State) string {
		t.Helper()
		ref, err := pushState(ctx, e.c, st, repo)
		if err != nil {
			t.Fatalf("exporting the reproduction: %v", err)
		}
		return ref
	}

	// The chain: base, then the step on it. Always complete.
	const chainRuns = 8
	for i := range chainRuns {
		ref := push(t, step(llb.Image(base, llb.Platform(platform))))
		if root := pulledRoot(t, ref); !complete(root) {
			t.Errorf("chain %d/%d: the root of %s as pulled is %v, want the base's files and /%s", i+1, chainRuns, ref, root, marker)
		}
	}

	// Diff and merge: the same image, and the pull can take the diff's
	// record for its root. Which record comes first is the order of random
	// record IDs in BuildKit's metadata index: about one run in three.
	const maxRuns = 40
	for i := range maxRuns {
		b := llb.Image(base, llb.Platform(platform))
		ref := push(t, llb.Merge([]llb.State{b, llb.Diff(b, step(b))}))
		root := pulledRoot(t, ref)
		if complete(root) {
			continue
		}
		if !slices.Equal(root, []string{marker}) {
			t.Fatalf("diff+merge %d: the root of %s as pulled is %v: incomplete, but not the top layer alone", i+1, ref, root)
		}
		t.Logf("reproduced in run %d of at most %d: the root of %s as pulled is %v, the top layer alone", i+1, maxRuns, ref, root)
		return
	}
	t.Errorf("in %d diff+merge runs the pulled root was always complete: this BuildKit no longer takes a diff record for a pulled layer; drop the note in docs/build.md and this test", maxRuns)
}
