package build

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/buildkit/client"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	digest "github.com/opencontainers/go-digest"

	"imagectl/internal/lock"
	"imagectl/internal/lock/resolve"
	"imagectl/internal/logs"
)

// secondBuildkitd is a buildkitd of the test's own.
type secondBuildkitd struct {
	unix string         // unix://DIR/buildkitd.sock
	tcp  string         // tcp://127.0.0.1:PORT, mutual TLS
	tls  TLS            // the client's side of tcp
	c    *client.Client // on unix
}

// startBuildkitd starts a buildkitd of the test's own from bin/buildkitd:
// its root, a unix socket and its TLS files under a temp dir, and a
// loopback TCP listener with mutual TLS (buildkitd --tlscacert --tlscert
// --tlskey), the OCI worker on runc (binfmt's QEMU handler gives it
// linux/arm64, as `make up` registers it); stopped at cleanup.
func startBuildkitd(t *testing.T, bin string) *secondBuildkitd {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatalf("runc is needed (make deps): %v", err)
	}
	dir, err := os.MkdirTemp("", "imagectl-bk2-") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	certs := writeTLS(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &secondBuildkitd{
		unix: "unix://" + filepath.Join(dir, "buildkitd.sock"),
		tcp:  "tcp://" + ln.Addr().String(),
		tls:  TLS{CACert: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey},
	}
	ln.Close()
	logf, err := os.Create(filepath.Join(dir, "buildkitd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "buildkitd"), "--root", filepath.Join(dir, "root"), "--addr", b.unix, "--addr", b.tcp,
		"--tlscacert", certs.CA, "--tlscert", certs.ServerCert, "--tlskey", certs.ServerKey,
		"--oci-worker=true", "--containerd-worker=false", "--oci-worker-snapshotter=overlayfs", "--oci-worker-binary="+runc)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a second buildkitd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if b.c != nil {
			b.c.Close()
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		os.RemoveAll(dir)
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := Dial(context.Background(), b.unix, 2*time.Second)
		if err == nil {
			b.c = c
			return b
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logf.Name())
			t.Fatalf("the second buildkitd exited: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logf.Name())
			t.Fatalf("the second buildkitd did not answer within 60s: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// recordingClient passes a solve to its client and records the digests of
// the vertexes its status reports.
type recordingClient struct {
	Client
	mu   sync.Mutex
	seen map[digest.Digest]bool
}

func (r *recordingClient) Build(ctx context.Context, opt client.SolveOpt, product string, bf gateway.BuildFunc, ch chan *client.SolveStatus) (*client.SolveResponse, error) {
	inner := make(chan *client.SolveStatus)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range inner {
			r.mu.Lock()
			for _, v := range s.Vertexes {
				if r.seen == nil {
					r.seen = map[digest.Digest]bool{}
				}
				r.seen[v.Digest] = true
			}
			r.mu.Unlock()
			if ch != nil {
				ch <- s
			}
		}
		if ch != nil {
			close(ch)
		}
	}()
	resp, err := r.Client.Build(ctx, opt, product, bf, inner)
	<-done
	return resp, err
}

// count is how many of ops the client's status reported.
func (r *recordingClient) count(ops map[digest.Digest]bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for d := range ops {
		if r.seen[d] {
			n++
		}
	}
	return n
}

// opDigests are the digests of the ops of platform p's build of l, less
// those of skip.
func opDigests(t *testing.T, l *lock.Lock, p string, skip map[digest.Digest]bool, opts ...Option) map[digest.Digest]bool {
	t.Helper()
	view, err := l.ForPlatform(p)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Definition(context.Background(), view, opts...)
	if err != nil {
		t.Fatalf("Definition(%s) = %v", p, err)
	}
	out := map[digest.Digest]bool{}
	for _, dt := range def.Def {
		if d := digest.FromBytes(dt); !skip[d] {
			out[d] = true
		}
	}
	return out
}

// pulledBases are the base images buildkitd's cache holds layers of
// ("pulled from REF").
func pulledBases(t *testing.T, c *client.Client) string {
	t.Helper()
	du, err := c.DiskUsage(context.Background())
	if err != nil {
		t.Fatalf("buildkitd disk usage: %v", err)
	}
	var s []string
	for _, r := range du {
		if strings.HasPrefix(r.Description, "pulled from ") {
			s = append(s, r.Description)
		}
	}
	return strings.Join(s, "\n")
}

// stepLog records the lock's "lock step done" records: platform and
// buildkitd of each step.
type stepLog struct {
	mu    sync.Mutex
	steps []string // "PLATFORM on ADDR: STEP"
}

func (h *stepLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *stepLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stepLog) WithGroup(string) slog.Handler            { return h }
func (h *stepLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "lock step done" {
		return nil
	}
	a := map[string]string{}
	r.Attrs(func(at slog.Attr) bool { a[at.Key] = at.Value.String(); return true })
	h.mu.Lock()
	h.steps = append(h.steps, fmt.Sprintf("%s on %s: %s", a["platform"], a["buildkitd"], a["step"]))
	h.mu.Unlock()
	return nil
}

// TestE2ENativeBuilderPerPlatform routes linux/arm64 to a second buildkitd
// of its own over loopback TCP with mutual TLS (as a platform team routes
// it to an arm64 host): the lock's
// arm64 apt and pip steps and the build's arm64 image run there and not
// on the first, amd64 stays on the first; and the index and its children
// have the digests of a build of the same lock on the first buildkitd
// alone.
func TestE2ENativeBuilderPerPlatform(t *testing.T) {
	e := getE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	img := e.twoPlatformDemo(t, ctx, "builders")
	bk2 := startBuildkitd(t, e.env.Bin)
	armAddr := bk2.tcp

	// Its TCP listener takes only clients with a certificate of its CA.
	copts, err := bk2.tls.ClientOptions(armAddr)
	if err != nil {
		t.Fatal(err)
	}
	arm, err := Dial(ctx, armAddr, 10*time.Second, copts...)
	if err != nil {
		t.Fatalf("dialling %s with mutual TLS: %v", armAddr, err)
	}
	defer arm.Close()
	caOnly, _ := TLS{CACert: bk2.tls.CACert}.ClientOptions(armAddr)
	for what, opts := range map[string][]client.ClientOpt{"without TLS": nil, "without a client certificate": caOnly} {
		if c, err := Dial(ctx, armAddr, 5*time.Second, opts...); err == nil {
			c.Close()
			t.Errorf("Dial(%s) %s succeeded, want it refused", armAddr, what)
		}
	}

	steps := &stepLog{}
	start := time.Now()
	l, err := resolve.Image(logs.With(ctx, slog.New(steps)), img, resolve.WithBuildkit(e.env.BuildkitHost),
		resolve.WithPlatformBuildkit("linux/arm64", armAddr, copts...), resolve.WithRoot(e.env.Root))
	if err != nil {
		t.Fatalf("locking demo, arm64 on the second buildkitd: %v", err)
	}
	t.Logf("lock, arm64 on %s: %.1fs", armAddr, time.Since(start).Seconds())
	// Written (which sets its digest, the images' lock label) as a user's
	// lock file is: the CLI below builds from the file.
	dir := t.TempDir()
	lockPath, bin := filepath.Join(dir, "lock.json"), filepath.Join(dir, "imagectl")
	if err := lock.Write(lockPath, l); err != nil {
		t.Fatal(err)
	}
	perPlatform := map[string]int{}
	for _, s := range steps.steps {
		switch {
		case strings.HasPrefix(s, "linux/arm64 on "+armAddr+": "), strings.HasPrefix(s, "linux/amd64 on "+e.env.BuildkitHost+": "):
			perPlatform[strings.Fields(s)[0]]++
		default:
			t.Errorf("lock step %q: want arm64 on %s, amd64 on %s", s, armAddr, e.env.BuildkitHost)
		}
	}
	t.Logf("lock steps: %v", perPlatform)
	if perPlatform["linux/arm64"] == 0 || perPlatform["linux/amd64"] == 0 {
		t.Errorf("lock steps per platform = %v (%q), want both", perPlatform, steps.steps)
	}

	armInitOpt := WithPlatformInit("linux/arm64", filepath.Join(filepath.Dir(e.init), "imagectl-init-linux-arm64"))
	amdAll := opDigests(t, l, "linux/amd64", nil, WithInit(e.init))
	armAll := opDigests(t, l, "linux/arm64", nil, WithInit(e.init), armInitOpt)
	armOps := opDigests(t, l, "linux/arm64", amdAll, WithInit(e.init), armInitOpt) // arm64's own
	amdOps := opDigests(t, l, "linux/amd64", armAll, WithInit(e.init))             // amd64's own
	first, second := &recordingClient{Client: e.c}, &recordingClient{Client: arm}
	start = time.Now()
	split, err := Solve(ctx, first, l, WithInit(e.init), WithPush(true), WithPlatformClient("linux/arm64", second))
	if err != nil {
		t.Fatalf("building demo, arm64 on the second buildkitd: %v", err)
	}
	t.Logf("split build: index %s in %.1fs", split.Digest, time.Since(start).Seconds())
	t.Logf("ops reported: first buildkitd %d of %d amd64, %d of %d arm64; second %d of %d arm64, %d of %d amd64",
		first.count(amdOps), len(amdOps), first.count(armOps), len(armOps), second.count(armOps), len(armOps), second.count(amdOps), len(amdOps))
	if n := first.count(armOps); n != 0 {
		t.Errorf("the first buildkitd reported %d of the %d arm64 ops", n, len(armOps))
	}
	if n := second.count(armOps); n < len(armOps)/2 {
		t.Errorf("the second buildkitd reported %d of the %d arm64 ops", n, len(armOps))
	}
	if n := second.count(amdOps); n != 0 {
		t.Errorf("the second buildkitd reported %d of the %d amd64 ops", n, len(amdOps))
	}
	if n := first.count(amdOps); n < len(amdOps)/2 {
		t.Errorf("the first buildkitd reported %d of the %d amd64 ops", n, len(amdOps))
	}
	// The second buildkitd (this test's alone: the first one is shared
	// with the other packages' tests) pulled the arm64 base, not the amd64 one.
	armBase, amdBase := l.Platforms[0].Base.ManifestDigest, l.Base.ManifestDigest
	if got := pulledBases(t, bk2.c); !strings.Contains(got, armBase) || strings.Contains(got, amdBase) {
		t.Errorf("the second buildkitd holds layers pulled from:\n%s\nwant the arm64 base %s and not the amd64 one %s", got, armBase, amdBase)
	}

	// The same lock on the first buildkitd alone (arm64 under QEMU there).
	start = time.Now()
	one, err := Solve(ctx, e.c, l, WithInit(e.init), WithPush(true))
	if err != nil {
		t.Fatalf("building demo on one buildkitd: %v", err)
	}
	t.Logf("one-builder build: index %s in %.1fs", one.Digest, time.Since(start).Seconds())
	if one.Digest != split.Digest {
		t.Errorf("index: split %s, one builder %s; want the same", split.Digest, one.Digest)
	}
	if len(one.Platforms) != 2 || len(split.Platforms) != 2 {
		t.Fatalf("Result.Platforms: split %+v, one builder %+v", split.Platforms, one.Platforms)
	}
	for i, p := range split.Platforms {
		if q := one.Platforms[i]; p.Platform != q.Platform || p.Digest != q.Digest || p.Size != q.Size {
			t.Errorf("%s: split %s (%d bytes), one builder %s %s (%d bytes)", p.Platform, p.Digest, p.Size, q.Platform, q.Digest, q.Size)
		}
		t.Logf("%s: %s, %d bytes", p.Platform, p.Digest, p.Size)
	}

	// The CLI: --builder over mutual TLS with buildctl's flags (cached by
	// now), the index as before, each vertex named with its platform.
	if out, err := exec.Command("go", "build", "-o", bin, "imagectl/cmd/imagectl").CombinedOutput(); err != nil {
		t.Fatalf("building imagectl: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, bin, "build", "--lock", lockPath, "--init", e.init, "--push", "-o", "json", "--progress", "plain",
		"--addr", e.env.BuildkitHost, "--builder", "linux/arm64="+armAddr,
		"--tlscacert", bk2.tls.CACert, "--tlscert", bk2.tls.Cert, "--tlskey", bk2.tls.Key)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("imagectl build --builder linux/arm64=%s: %v\n%s", armAddr, err, stderr.String())
	}
	var res Result
	if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil || res.Digest != split.Digest || len(res.Platforms) != 2 {
		t.Errorf("imagectl build --builder: %v, %+v; want the index %s", err, res, split.Digest)
	}
	if !strings.Contains(stderr.String(), "[linux/arm64] ") || !strings.Contains(stderr.String(), "[linux/amd64] ") {
		t.Errorf("imagectl build --builder progress names no platform:\n%s", stderr.String())
	}
}
