package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"

	"imagectl/internal/lock"
)

// downstreamRuns is how many downstream builds each path (Dockerfile
// frontend, llb.Image) makes, each on an image built just before it.
const downstreamRuns = 5

// TestE2EDownstreamFromOnTheSameBuilder is what the platform's users do
// right after a release: on the buildkitd that built the image, with its
// cache warm, build FROM the pushed digest and RUN something that needs the
// base's shell and Python. Each run builds and pushes the demo again with
// one label changed (the lock digest, hence the init layer, moves; every
// other layer is a cache hit) so that every downstream pull meets records
// of a build it has not seen, then builds on it: 5 times through BuildKit's
// built-in Dockerfile frontend, 5 times through llb.Image.
func TestE2EDownstreamFromOnTheSameBuilder(t *testing.T) {
	e := getE2E(t)
	ctx := context.Background()
	repo := uniq("downstream")
	build := func(t *testing.T, run string) *Result {
		t.Helper()
		l := e.lock(t, repo, "1.0.0", smallCore)
		l.Labels["dev.imagectl.test.run"] = run
		if _, err := lock.Marshal(l); err != nil {
			t.Fatal(err)
		}
		r, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true))
		if err != nil {
			t.Fatalf("building the demo: %v", err)
		}
		return r
	}
	// The RUN: the base's shell, the base's Python (through the venv on the
	// image's PATH and directly), the locked wheels and debs.
	const script = `set -e; mkdir /out; echo "$RUN_ID" > /out/run-id; ` +
		`python3 -c 'import demo_core, demo_util, sys; print(sys.version_info[0])' > /out/python; ` +
		`/usr/bin/python3 -c 'import sys; print(sys.executable)' > /out/base-python; ` +
		`dpkg-query -W -f '${Package}\n' jq > /out/jq; readlink -f /bin/sh > /out/sh`
	check := func(t *testing.T, how, run string, out map[string]string) {
		t.Helper()
		want := map[string]string{"run-id": run, "python": "3", "base-python": "/usr/bin/python3", "jq": "jq"}
		for f, v := range want {
			if got := strings.TrimSpace(out[f]); got != v {
				t.Errorf("%s: /out/%s = %q, want %q (files: %v)", how, f, got, v, out)
			}
		}
		if !strings.HasSuffix(strings.TrimSpace(out["sh"]), "dash") {
			t.Errorf("%s: /bin/sh is %q, want the base's dash", how, out["sh"])
		}
	}

	for i := range downstreamRuns {
		run := fmt.Sprintf("dockerfile-%d", i+1)
		r := build(t, run)
		dockerfile := fmt.Sprintf("FROM %s AS run\nARG RUN_ID\nRUN %s\nFROM scratch\nCOPY --from=run /out/ /\n", r.Ref, script)
		out, err := solveDockerfile(ctx, e.c, dockerfile, map[string]string{"build-arg:RUN_ID": run})
		if err != nil {
			t.Errorf("run %d/%d: Dockerfile FROM %s on the builder that built it: %v", i+1, downstreamRuns, r.Ref, err)
			continue
		}
		check(t, "Dockerfile FROM "+r.Ref, run, out)
		t.Logf("run %d/%d: Dockerfile FROM %s: ok", i+1, downstreamRuns, r.Digest)
	}
	for i := range downstreamRuns {
		run := fmt.Sprintf("llb-%d", i+1)
		r := build(t, run)
		st := llb.Image(r.Ref, llb.Platform(platform)).Run(
			llb.Args([]string{"/bin/sh", "-c", script}),
			llb.AddEnv("PATH", systemPath),
			llb.AddEnv("RUN_ID", run),
		).Root()
		out, err := solveLocal(ctx, e.c, st, "/out")
		if err != nil {
			t.Errorf("run %d/%d: llb.Image(%s).Run on the builder that built it: %v", i+1, downstreamRuns, r.Ref, err)
			continue
		}
		check(t, "llb.Image("+r.Ref+")", run, out)
		t.Logf("run %d/%d: llb.Image(%s): ok", i+1, downstreamRuns, r.Digest)
	}
}

// solveDockerfile builds dockerfile with BuildKit's built-in Dockerfile
// frontend (no `# syntax=` image: none is reachable here), the Dockerfile
// and an empty context given as frontend inputs, and returns the files of
// the final stage.
func solveDockerfile(ctx context.Context, c *client.Client, dockerfile string, attrs map[string]string) (map[string]string, error) {
	dir, err := os.MkdirTemp("", "imagectl-build-e2e-out-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	df := llb.Scratch().File(llb.Mkfile("Dockerfile", 0o644, []byte(dockerfile)))
	_, err = c.Solve(ctx, nil, client.SolveOpt{
		Frontend:       "dockerfile.v0",
		FrontendAttrs:  attrs,
		FrontendInputs: map[string]llb.State{"dockerfile": df},
		Exports:        []client.ExportEntry{{Type: client.ExporterLocal, OutputDir: dir}},
	}, nil)
	if err != nil {
		return nil, err
	}
	return readFiles(dir)
}

// solveLocal solves st and returns the files under sub of its result.
func solveLocal(ctx context.Context, c *client.Client, st llb.State, sub string) (map[string]string, error) {
	dir, err := os.MkdirTemp("", "imagectl-build-e2e-out-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := llb.Scratch().File(llb.Copy(st, sub+"/", "/", &llb.CopyInfo{CopyDirContentsOnly: true}))
	def, err := out.Marshal(ctx, llb.Platform(platform))
	if err != nil {
		return nil, err
	}
	if _, err := c.Solve(ctx, def, client.SolveOpt{Exports: []client.ExportEntry{{Type: client.ExporterLocal, OutputDir: dir}}}, nil); err != nil {
		return nil, err
	}
	return readFiles(dir)
}

// pushState exports st as an image pushed by digest to repo and returns
// repo@digest.
func pushState(ctx context.Context, c *client.Client, st llb.State, repo string) (string, error) {
	def, err := st.Marshal(ctx, llb.Platform(platform))
	if err != nil {
		return "", err
	}
	resp, err := c.Solve(ctx, def, client.SolveOpt{Exports: []client.ExportEntry{{Type: client.ExporterImage, Attrs: map[string]string{
		string(exptypes.OptKeyName):         repo,
		string(exptypes.OptKeyPush):         "true",
		string(exptypes.OptKeyPushByDigest): "true",
	}}}}, nil)
	if err != nil {
		return "", err
	}
	d := resp.ExporterResponse[exptypes.ExporterImageDigestKey]
	if d == "" {
		return "", fmt.Errorf("pushing to %s: buildkitd reported no digest", repo)
	}
	return repo + "@" + d, nil
}

func readFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			return nil, err
		}
		files[en.Name()] = string(b)
	}
	return files, nil
}
