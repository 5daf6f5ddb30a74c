package release

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"imagectl/internal/discover"
	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
	"imagectl/internal/releasefile"
	"imagectl/internal/scan"
	"imagectl/internal/scan/scantest"
	"imagectl/internal/sign"
	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// userEnv is a user who pins digests: a fresh HOME holding only the
// platform's public keys (~/.config/imagectl/keys), and an empty working
// directory: no checkout of the platform's files.
type userEnv struct {
	bin, home, work string
}

func newUserEnv(t *testing.T, bin, signPub, verPub string) *userEnv {
	t.Helper()
	u := &userEnv{bin: bin, home: t.TempDir(), work: t.TempDir()}
	keys := filepath.Join(u.home, ".config", "imagectl", "keys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{signPub: discover.SigningKeyFile, verPub: discover.VerifierKeyFile} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(keys, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// run runs bin/imagectl as the user and returns stdout, stderr and the exit code.
func (u *userEnv) run(t *testing.T, ctx context.Context, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, u.bin, args...)
	cmd.Dir = u.work
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "XDG_CONFIG_HOME", discover.KeysDirEnv, "DOCKER_CONFIG":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "HOME="+u.home)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("imagectl %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// TestUsersEndToEnd drives issue 32's done-when list: two months of the
// demo line are released to the local registry (the first with bookworm's
// jq, which the fixture database's CVE-2026-32316 affects; the second with
// demo-util 1.1.0 and the fixed jq), each with a one-month support window,
// so that last month's release has expired and this month's is in its last
// month. Then a user with a fresh HOME holding only the public keys and an
// empty working directory:
//   - lists the line from the registry (releases REPO), both verified, with
//     the lock's contents and the support ends;
//   - diffs the two releases: demo-util changed, CVE-2026-32316 fixed;
//   - pins this month's release (a last-month warning) and is refused last
//     month's (exit 5) unless --accept-expired;
//   - bumps a Dockerfile, a Deployment, a compose file and a workflow from
//     last month's digest to this month's, comments and layout kept (exit
//     10, then 0);
//   - reads the support window signed in the registry with stock cosign,
//     and the platform's scan releases reports last month's release
//     expired instead of scanning it again;
//   - writes the catalog, which headless Chromium renders without console
//     errors or broken links, with the facts in the DOM; with
//     IMAGECTL_UPDATE_SCREENSHOT=1 its line page is saved as
//     docs/images/catalog-demo.png.
func TestUsersEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	testenv.NeedChromium(t)
	dr := newDemoRelease(t, ctx, "e2e-users", 1<<20)
	bin := filepath.Join(dr.env.Bin, "imagectl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (make build)", bin, err)
	}
	now := time.Now().UTC()
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	prevMonth, curMonth := first.AddDate(0, -1, 0).Format("2006-01"), first.Format("2006-01")
	db := scantest.BuildDB(t, time.Time{}, scantest.JQ)
	stages := func(month string) *Real {
		r := dr.stages(t, month)
		r.cfg.SupportMonths = map[string]int{"demo": 1}
		r.cfg.VulnDB = db
		return r
	}

	// Last month: bookworm's jq, which the fixture record affects.
	dr.imgs[0].Apt = []string{"jq=" + scanJQ, "libjq1=" + scanJQ}
	out, err := Run(ctx, dr.imgs, stages(prevMonth))
	if err != nil {
		t.Fatalf("%s release: %v", prevMonth, err)
	}
	oldDigest := out[0].Digest
	// This month: demo-util 1.1.0 and bookworm-security's fixed jq; the
	// lock is resolved again from the changed spec.
	dr.index.Publish(t, wheelhouse.Spec{Name: "demo-util", Version: "1.1.0", Requires: []string{"demo-dep>=1"}})
	dr.imgs[0].Apt = []string{"jq"}
	if err := os.Remove(lock.Path(dr.images, "demo")); err != nil {
		t.Fatal(err)
	}
	out, err = Run(ctx, dr.imgs, stages(curMonth))
	if err != nil {
		t.Fatalf("%s release: %v", curMonth, err)
	}
	newDigest := out[0].Digest
	if newDigest == oldDigest {
		t.Fatalf("both months released %s", newDigest)
	}
	repo := dr.imgs[0].Repos.Release
	prevTag := "demo-" + strings.ReplaceAll(prevMonth, "-", ".")
	curTag := "demo-" + strings.ReplaceAll(curMonth, "-", ".")
	oldEnd, _ := discover.NewSupport(prevMonth, 1)
	newEnd, _ := discover.NewSupport(curMonth, 1)

	u := newUserEnv(t, bin, dr.keys.signPub, dr.keys.verPub)

	// 1. Discovery from the registry alone.
	stdout, stderr, code := u.run(t, ctx, "releases", repo, "-o", "json")
	var listed struct {
		Repository string             `json:"repository"`
		Releases   []discover.Release `json:"releases"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &listed) != nil || len(listed.Releases) != 2 {
		t.Fatalf("releases %s: exit %d\n%s\n%s", repo, code, stdout, stderr)
	}
	for i, want := range []struct{ digest, month, tag, end string }{{newDigest, curMonth, curTag, newEnd.End}, {oldDigest, prevMonth, prevTag, oldEnd.End}} {
		r := listed.Releases[i]
		if r.Digest != want.digest || r.Month != want.month || r.Tag() != want.tag || !r.Verified || r.Lock == nil || r.Lock.Python == "" ||
			r.Support == nil || r.Support.End != want.end || len(r.Platforms) != 1 {
			t.Errorf("releases[%d] = %+v, want %s (%s, %s) verified with its lock, support end %s and platform", i, r, want.digest, want.tag, want.month, want.end)
		}
	}
	if slices := listed.Releases[0].Moving; len(slices) != 1 || slices[0] != "demo" {
		t.Errorf("the moving tag demo is on %v, want this month's release", listed.Releases[0].Moving)
	}
	if stdout, _, code := u.run(t, ctx, "releases", repo); code != 0 || !strings.Contains(stdout, curTag) || !strings.Contains(stdout, "pin with: imagectl pin "+repo) {
		t.Errorf("releases %s (table): exit %d\n%s", repo, code, stdout)
	} else {
		t.Logf("imagectl releases %s:\n%s", repo, stdout)
	}

	// 2. diff names the changed wheel and the CVE fixed.
	stdout, stderr, code = u.run(t, ctx, "diff", repo+":"+prevTag, curTag, "-o", "json")
	var d discover.Diff
	if code != 0 || json.Unmarshal([]byte(stdout), &d) != nil {
		t.Fatalf("diff: exit %d\n%s\n%s", code, stdout, stderr)
	}
	changed := map[string]string{}
	for _, c := range d.Changed {
		changed[c.Name] = c.Old + " -> " + c.New
	}
	if changed["demo-util"] != "1.0.0 -> 1.1.0" {
		t.Errorf("diff changed = %v, want demo-util 1.0.0 -> 1.1.0", changed)
	}
	if _, ok := changed["demo-core"]; ok {
		t.Errorf("diff names the unchanged demo-core: %v", changed)
	}
	fixed := false
	for _, f := range d.Fixed {
		fixed = fixed || f.ID == "CVE-2026-32316"
	}
	if !fixed || d.Old.Scan == nil || d.New.Scan == nil {
		t.Errorf("diff fixed = %+v (scans %+v, %+v), want CVE-2026-32316", d.Fixed, d.Old.Scan, d.New.Scan)
	}
	if d.Old.Verification == nil || !d.New.Verification.Passed || d.Old.Size == 0 || d.LayersAdded == 0 {
		t.Errorf("diff sides = %+v / %+v (%d layers added), want both verifications and sizes", d.Old, d.New, d.LayersAdded)
	}
	if stdout, _, code := u.run(t, ctx, "diff", repo+":"+prevTag, curTag); code != 0 || !strings.Contains(stdout, "demo-util") || !strings.Contains(stdout, "CVE-2026-32316") {
		t.Errorf("diff (table): exit %d\n%s", code, stdout)
	} else {
		t.Logf("imagectl diff %s:%s %s:\n%s", repo, prevTag, curTag, stdout)
	}
	// An unsigned input is refused.
	if _, stderr, code := u.run(t, ctx, "diff", repo+":"+prevTag, dr.imgs[0].Repos.Staging+"@sha256:"+strings.Repeat("0", 64)); code == 0 {
		t.Errorf("diff with an unknown, unsigned digest: exit 0\n%s", stderr)
	}

	// 3. pin: this month's with a warning, last month's refused.
	stdout, stderr, code = u.run(t, ctx, "pin", repo+":demo")
	if code != 0 || strings.TrimSpace(stdout) != repo+"@"+newDigest || !strings.Contains(stderr, "leaves support on "+newEnd.End) {
		t.Errorf("pin %s:demo: exit %d, stdout %q, stderr %q; want %s@%s and the last-month warning", repo, code, stdout, stderr, repo, newDigest)
	}
	if stdout, stderr, code := u.run(t, ctx, "pin", repo+":"+prevTag); code != exitcode.PromotionRefused || stdout != "" || !strings.Contains(stderr, "out of support since "+oldEnd.End) {
		t.Errorf("pin of the expired %s: exit %d, stdout %q, stderr %q; want exit 5 naming the end", prevTag, code, stdout, stderr)
	}
	if stdout, _, code := u.run(t, ctx, "pin", repo+":"+prevTag, "--accept-expired"); code != 0 || strings.TrimSpace(stdout) != repo+"@"+oldDigest {
		t.Errorf("pin --accept-expired %s: exit %d, %q", prevTag, code, stdout)
	}

	// 4. bump: a Dockerfile, a Deployment, a compose file and a workflow.
	oldRef, newRef := repo+"@"+oldDigest, repo+"@"+newDigest
	files := map[string]string{
		"Dockerfile": fmt.Sprintf("# the platform's demo image, pinned\nFROM %s:%s@%s AS base  # keep this comment\nRUN true\n", repo, prevTag, oldDigest),
		"k8s/deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: train  # the trainer
spec:
  template:
    spec:
      containers:
        - name: train
          # bumped weekly by CI
          image: "%s"
          args: ["--epochs",   "3"]
`, oldRef),
		"compose.yaml":               fmt.Sprintf("services:\n  train:\n    image: %s   # trailing comment\n    shm_size: 8gb\n", oldRef),
		".github/workflows/test.yml": fmt.Sprintf("on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    container:\n      image: %s\n    steps:\n      - run: python -c 'import demo_util'   # smoke\n", oldRef),
	}
	for p, c := range files {
		path := filepath.Join(u.work, "app", p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if stdout, _, code := u.run(t, ctx, "bump", "app", "--repo", repo, "--dry-run"); code != exitcode.PinsMoved || !strings.Contains(stdout, curTag) {
		t.Errorf("bump --dry-run: exit %d, want %d\n%s", code, exitcode.PinsMoved, stdout)
	}
	stdout, stderr, code = u.run(t, ctx, "bump", "app", "--repo", repo)
	t.Logf("imagectl bump app --repo %s (exit %d):\n%s%s", repo, code, stdout, stderr)
	if code != exitcode.PinsMoved || !strings.Contains(stdout, "demo-util 1.0.0 -> 1.1.0") || !strings.Contains(stdout, "CVE-2026-32316") {
		t.Errorf("bump: exit %d, want %d and a diff summary naming demo-util and the CVE fixed\n%s\n%s", code, exitcode.PinsMoved, stdout, stderr)
	}
	for p, c := range files {
		want := strings.ReplaceAll(c, repo+":"+prevTag+"@"+oldDigest, repo+":"+curTag+"@"+newDigest)
		want = strings.ReplaceAll(want, oldRef, newRef)
		got, err := os.ReadFile(filepath.Join(u.work, "app", p))
		if err != nil || string(got) != want {
			t.Errorf("%s after bump:\n%s\nwant\n%s", p, got, want)
		}
	}
	if stdout, _, code := u.run(t, ctx, "bump", "app", "--repo", repo); code != 0 || !strings.Contains(stdout, "nothing to do") {
		t.Errorf("bump again: exit %d, want 0\n%s", code, stdout)
	}

	// 4b. The support window is in the release file and, signed, in the
	// registry, where stock cosign verifies it; the platform's daily
	// re-scan reports last month's release expired instead of scanning it.
	rf, err := releasefile.ReadFile(filepath.Join(dr.images, "demo", releasefile.FileName))
	if err != nil || len(rf.Releases) != 2 || rf.Releases[0].SupportEnd != oldEnd.End || rf.Releases[1].SupportEnd != newEnd.End {
		t.Errorf("release file = %+v, %v; want support ends %s and %s", rf, err, oldEnd.End, newEnd.End)
	}
	cos := exec.CommandContext(ctx, filepath.Join(dr.env.Bin, "cosign"), "verify-attestation", "--key", dr.keys.signPub,
		"--insecure-ignore-tlog", "--allow-insecure-registry", "--type", discover.SupportPredicateType, newRef)
	if b, err := cos.CombinedOutput(); err != nil {
		t.Errorf("cosign verify-attestation --type %s %s: %v\n%s", discover.SupportPredicateType, newRef, err, b)
	}
	rescan := exec.CommandContext(ctx, bin, "scan", "releases", dr.images, "--key", dr.keys.signPub, "--signing-key", dr.keys.signKey, "--db", db, "-o", "json")
	rescan.Env = append(os.Environ(), sign.CosignPasswordEnv+"="+string(e2ePassword))
	b, err := rescan.Output()
	var rs []scan.Rescan
	if err != nil || json.Unmarshal(b, &rs) != nil || len(rs) != 2 {
		t.Fatalf("scan releases: %v\n%s", err, b)
	}
	for _, r := range rs {
		switch r.Month {
		case prevMonth:
			if r.Expired != oldEnd.End || r.Previous != "" || r.Findings != 0 {
				t.Errorf("scan releases, %s: %+v; want it reported expired since %s, not scanned", prevMonth, r, oldEnd.End)
			}
		case curMonth:
			if r.Expired != "" || r.Previous == "" {
				t.Errorf("scan releases, %s: %+v; want it scanned again", curMonth, r)
			}
		}
	}

	// 5. The catalog, rendered in headless Chromium.
	site := filepath.Join(u.work, "site")
	if _, stderr, code := u.run(t, ctx, "catalog", repo, "--out", site); code != 0 {
		t.Fatalf("catalog: exit %d\n%s", code, stderr)
	}
	pages := testenv.CheckSite(t, testenv.ServeSite(t, site))
	line := pages["/lines/demo.html"]
	for _, want := range []string{"imagectl pin " + repo + ":" + curTag, newRef, "demo-util", "CVE-2026-32316", newEnd.End, "expired", "Driver floor", "passed"} {
		if !strings.Contains(line.DOM, want) {
			t.Errorf("the rendered catalog page lacks %q", want)
		}
	}
	if !strings.Contains(pages["/index.html"].DOM, curTag) {
		t.Errorf("the rendered index lacks the newest release %s", curTag)
	}
	shot := filepath.Join(t.TempDir(), "catalog-demo.png")
	testenv.Render(t, testenv.ServeSite(t, site).URL+"/lines/demo.html", shot, 1280)
	if os.Getenv("IMAGECTL_UPDATE_SCREENSHOT") == "1" {
		copyFile(t, shot, filepath.Join(dr.env.Root, "docs", "images", "catalog-demo.png"))
	}
	if _, err := name.NewDigest(newRef); err != nil {
		t.Error(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
