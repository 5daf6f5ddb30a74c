package bump

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
)

var (
	oldD   = "sha256:" + strings.Repeat("a", 64)
	newD   = "sha256:" + strings.Repeat("b", 64)
	otherD = "sha256:" + strings.Repeat("c", 64)
	repo   = "registry.example:5000/ml/demo"
)

type fakeResolver map[string]*Target

func (f fakeResolver) Target(_ context.Context, r name.Repository) (*Target, error) {
	if t, ok := f[r.Name()]; ok {
		return t, nil
	}
	return nil, &StuckError{Repository: r.Name(), Reason: "no release passes pin's gates"}
}

func target(t *testing.T) fakeResolver {
	t.Helper()
	d, err := name.NewDigest(repo+"@"+newD, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	return fakeResolver{repo: {Digest: d, Tag: "demo-2026.12", Month: "2026-12"}}
}

// files are a user's pins: a Dockerfile, a Deployment, a compose file, a
// workflow and a plain list, each with comments and odd formatting that
// must survive, and pins of other images that must not move.
var files = map[string]string{
	"Dockerfile": `# syntax=docker/dockerfile:1
# the platform's image, pinned
ARG BASE=` + repo + `@` + oldD + `
FROM   ` + repo + `:demo-2026.11@` + oldD + `   AS   base   # keep me
FROM docker.io/library/debian@` + otherD + `
COPY --from=` + repo + `@` + oldD + ` /opt /opt
RUN echo ` + repo + `@` + oldD + `
`,
	"k8s/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: train   # the trainer
spec:
  template:
    spec:
      containers:
        - name: train
          # pinned by imagectl bump
          image:   "` + repo + `@` + oldD + `"
          args: ["--image", "` + repo + `@` + oldD + `"]
        - name: sidecar
          image: docker.io/library/busybox@` + otherD + `
---
# a second document
apiVersion: v1
kind: Pod
spec:
  containers:
  - image: '` + repo + `:demo@` + oldD + `'   # moving tag kept
`,
	"compose.yaml": `services:
  train:
    image: ` + repo + `@` + oldD + ` # trailing comment
    environment:
      - X=1
`,
	".github/workflows/ci.yml": `on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    container:
      image: ` + repo + `@` + oldD + `
    services:
      cache:
        image: ` + repo + `@` + newD + `
    steps:
      - uses: docker://` + repo + `@` + oldD + `   # step image
      - run: echo done
`,
	"pins.txt": `# pins
train ` + repo + `@` + oldD + `
other docker.io/library/debian@` + otherD + `
`,
}

func writeFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunRewritesOnlyTheDigests(t *testing.T) {
	dir := writeFiles(t)
	res, err := Run(context.Background(), []string{dir}, target(t), WithRepositories("registry.example:5000/ml/"))
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	// Every file: the same bytes with the platform's old pins replaced.
	for p, c := range files {
		want := strings.ReplaceAll(c, repo+"@"+oldD, repo+"@"+newD)
		want = strings.ReplaceAll(want, repo+":demo-2026.11@"+oldD, repo+":demo-2026.12@"+newD)
		want = strings.ReplaceAll(want, repo+":demo@"+oldD, repo+":demo@"+newD)
		if p == "Dockerfile" { // RUN lines are not pins
			want = strings.Replace(want, "RUN echo "+repo+"@"+newD, "RUN echo "+repo+"@"+oldD, 1)
		}
		if p == "k8s/deployment.yaml" { // args are not image keys
			want = strings.Replace(want, `"--image", "`+repo+"@"+newD, `"--image", "`+repo+"@"+oldD, 1)
		}
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s after Run (-want +got):\n%s", p, diff)
		}
	}
	if got, want := len(res.Changes), 9; got != want {
		t.Errorf("Run() changed %d pins, want %d: %+v", got, want, res.Changes)
	}
	if len(res.Current) != 1 || res.Current[0].Digest != newD {
		t.Errorf("Run() current = %+v, want the workflow's service already at %s", res.Current, newD)
	}
	if len(res.Files) != 5 || len(res.Stuck) != 0 {
		t.Errorf("Run() files = %v, stuck = %v; want 5 files, none stuck", res.Files, res.Stuck)
	}

	// Again: nothing to do.
	again, err := Run(context.Background(), []string{dir}, target(t), WithRepositories(repo))
	if err != nil || len(again.Changes) != 0 || len(again.Files) != 0 {
		t.Errorf("second Run() = %+v, %v; want nothing to do", again, err)
	}
}

func TestRunDryRunWritesNothing(t *testing.T) {
	dir := writeFiles(t)
	res, err := Run(context.Background(), []string{dir}, target(t), WithRepositories(repo), WithDryRun(true))
	if err != nil || len(res.Changes) == 0 || !res.DryRun {
		t.Fatalf("Run(dry run) = %+v, %v", res, err)
	}
	for p, c := range files {
		if got, _ := os.ReadFile(filepath.Join(dir, p)); string(got) != c {
			t.Errorf("a dry run changed %s", p)
		}
	}
}

func TestRunStuck(t *testing.T) {
	dir := writeFiles(t)
	res, err := Run(context.Background(), []string{filepath.Join(dir, "compose.yaml")}, fakeResolver{}, WithRepositories(repo))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stuck) != 1 || res.Stuck[0].Reason != "no release passes pin's gates" || len(res.Changes) != 0 {
		t.Errorf("Run() = %+v, want the compose pin stuck with the reason", res)
	}
}

func TestRunNeedsRepositories(t *testing.T) {
	if _, err := Run(context.Background(), []string{t.TempDir()}, fakeResolver{}); err == nil {
		t.Error("Run() without repositories = nil error, want one")
	}
}

func TestFindPositions(t *testing.T) {
	pins, err := Find("Dockerfile", KindDockerfile, []byte(files["Dockerfile"]))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pins {
		got = append(got, p.Tag+" "+p.Repository+" "+string(rune('0'+p.Line)))
	}
	want := []string{" " + repo + " 3", "demo-2026.11 " + repo + " 4", " index.docker.io/library/debian 5", " " + repo + " 6"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find(Dockerfile) (-want +got):\n%s", diff)
	}
}

func TestKindOf(t *testing.T) {
	for path, want := range map[string]string{
		"Dockerfile": KindDockerfile, "x/Containerfile": KindDockerfile, "app.Dockerfile": KindDockerfile, "Dockerfile.gpu": KindDockerfile,
		"k8s/a.yaml": KindYAML, "compose.yml": KindYAML, "repo/.github/workflows/ci.yml": KindWorkflow, "pins.txt": KindText,
	} {
		if got := KindOf(path); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestRunSkipsUnparsableWalkedFiles: a Helm template found in a folder is
// not YAML; it is reported and left alone, the other files still bumped.
// Named on the command line, it is an error.
func TestRunSkipsUnparsableWalkedFiles(t *testing.T) {
	dir := writeFiles(t)
	helm := filepath.Join(dir, "chart", "templates", "deploy.yaml")
	if err := os.MkdirAll(filepath.Dir(helm), 0o755); err != nil {
		t.Fatal(err)
	}
	tmpl := "spec:\n  image: {{ .Values.image }}\n  x: [\n"
	if err := os.WriteFile(helm, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), []string{dir}, target(t), WithRepositories(repo))
	if err != nil || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "deploy.yaml") || len(res.Changes) == 0 {
		t.Errorf("Run() = %+v, %v; want the template skipped and the rest bumped", res, err)
	}
	if _, err := Run(context.Background(), []string{helm}, target(t), WithRepositories(repo)); err == nil {
		t.Error("Run(the template itself) = nil error, want the parse error")
	}
}
