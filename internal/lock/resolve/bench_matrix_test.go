package resolve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"imagectl/internal/atomicfile"
	"imagectl/internal/lock"
	"imagectl/internal/logs"
	"imagectl/internal/mirror"
	"imagectl/internal/pep"
	"imagectl/internal/spec"
	"imagectl/internal/testenv"
	"imagectl/internal/wheelhouse"
)

// servedCounter serves a directory as `python3 -m http.server` does (whole
// files, no range requests, index.html for directories) and counts what it
// sent, per file.
type servedCounter struct {
	dir    string
	ranges bool // answer range requests (as nginx, S3 and GCS do)
	mu     sync.Mutex
	bytes  map[string]int64
	gets   map[string]int
}

func (s *servedCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := filepath.Join(s.dir, filepath.FromSlash(r.URL.Path))
	if strings.HasSuffix(r.URL.Path, "/") {
		p = filepath.Join(p, "index.html")
	}
	f, err := os.Open(p)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		http.NotFound(w, r)
		return
	}
	var n int64
	if s.ranges {
		cw := &countingResponse{ResponseWriter: w}
		http.ServeContent(cw, r, filepath.Base(p), time.Time{}, f)
		n = cw.n
	} else {
		w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
		if r.Method != http.MethodHead {
			n, _ = f.WriteTo(w)
		}
	}
	s.mu.Lock()
	s.bytes[filepath.Base(p)] += n
	if r.Method != http.MethodHead && (!s.ranges || r.Header.Get("Range") == "") {
		s.gets[filepath.Base(p)]++ // whole-file fetches; range reads count in bytes only
	}
	s.mu.Unlock()
}

type countingResponse struct {
	http.ResponseWriter
	n int64
}

func (c *countingResponse) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func (s *servedCounter) reset() (map[string]int64, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, g := s.bytes, s.gets
	s.bytes, s.gets = map[string]int64{}, map[string]int{}
	return b, g
}

// BenchmarkLockMatrix locks the four images of specs/pytorch.hcl (only its
// variables set) against a torch index that is a plain static directory (no
// metadata, no range requests) whose torch wheels are IMAGECTL_BENCH_BIG_BYTES
// each (default 1 GiB), and compares it with the bare resolutions a lock
// runs: per image the same apt solve and pip solve, pip pointed at the two
// indexes directly (--index-url PyPI --extra-index-url torch), as plain pip
// would be. The Debian fixture base offers only python3.11, so all four
// images resolve python 3.11 here (the py3.10 ones would be refused at the
// apt step): two images per torch variant, sharing their big wheel, as the
// real matrix's py3.10/py3.11 images share the nvidia-* wheels. Reports
// lock/bare (target <= 1.2) and how often each big wheel left the server
// per run (target: at most once per lock run). The sub-benchmarks serve the
// torch index without range requests (python3 -m http.server) and with them
// (nginx, S3, GCS), and offer on the PyPI stand-in Debian bookworm's pip
// (23.0.1, /usr/share/python-wheels) alone or, when IMAGECTL_BENCH_NEW_PIP
// names a newer pip wheel (hack/bench/pipwhl.sh: Debian forky's), both,
// as the real PyPI offers new pips: the lock resolves with the newest, and
// so does the bare pip. With -v the lock's steps are logged.
func BenchmarkLockMatrix(b *testing.B) {
	pips, _ := filepath.Glob("/usr/share/python-wheels/pip-*-py3-none-any.whl")
	if len(pips) == 0 {
		b.Fatal("no /usr/share/python-wheels/pip-*.whl (make deps: python3-pip-whl)")
	}
	debian := pips[len(pips)-1]
	resolvers := [][]string{{debian}}
	if p := os.Getenv("IMAGECTL_BENCH_NEW_PIP"); p != "" {
		resolvers = append(resolvers, []string{debian, p})
	}
	for _, ranges := range []bool{false, true} {
		name := "plain-static"
		if ranges {
			name = "with-ranges"
		}
		b.Run(name, func(b *testing.B) {
			for _, offered := range resolvers {
				w, ok := pep.ParseWheel(filepath.Base(offered[len(offered)-1]))
				if !ok {
					b.Fatalf("%s is not a wheel name", offered[len(offered)-1])
				}
				b.Run("pip-"+w.Version, func(b *testing.B) { benchLockMatrix(b, ranges, offered) })
			}
		})
	}
}

func benchLockMatrix(b *testing.B, ranges bool, pips []string) {
	env := testenv.Get(b)
	if env.UpstreamRegistry == "" {
		b.Skip("no upstream registry fixture (make up)")
	}
	big := int64(1 << 30)
	if v := os.Getenv("IMAGECTL_BENCH_BIG_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("IMAGECTL_BENCH_BIG_BYTES=%q: %v", v, err)
		}
		big = n
	}
	dir := filepath.Join(env.Root, ".cache", "bench", fmt.Sprintf("standins-torch-%d", big))
	start := time.Now()
	if err := wheelhouse.WriteStandins(dir, "torch", big, pips[:1]); err != nil {
		b.Fatal(err)
	}
	pypi := filepath.Join(dir, "pypi")
	if len(pips) > 1 {
		// The same PyPI stand-in with the newer pips beside bookworm's.
		pypi = b.TempDir()
		have, _ := filepath.Glob(filepath.Join(dir, "pypi", "files", "*.whl"))
		for _, f := range append(have, pips[1:]...) {
			raw, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			if err := atomicfile.Write(filepath.Join(pypi, "files", filepath.Base(f)), raw, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := wheelhouse.WriteIndex(pypi); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stand-ins with %d-byte torch wheels ready in %s (%s)", big, time.Since(start).Round(time.Millisecond), dir)
	torchSrv := &servedCounter{dir: filepath.Join(dir, "torch"), ranges: ranges, bytes: map[string]int64{}, gets: map[string]int{}}
	ts := httptest.NewServer(torchSrv)
	defer ts.Close()
	ps := httptest.NewServer(wheelhouse.Handler(pypi))
	defer ps.Close()

	ctx := context.Background()
	if testing.Verbose() {
		ctx = logs.With(ctx, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}
	imgs, err := spec.Load(ctx, []string{filepath.Join(env.Root, "specs", "pytorch.hcl")}, spec.WithVars(map[string]string{
		"registry": env.Registry, "base_registry": env.UpstreamRegistry, "torch_index": ts.URL, "pypi_index": ps.URL + "/simple/",
	}))
	if err != nil {
		b.Fatal(err)
	}
	for i := range imgs {
		imgs[i].Python = "3.11"
	}
	if _, err := mirror.Run(ctx, imgs); err != nil {
		b.Fatal(err)
	}
	r := &buildkitRunner{addr: env.BuildkitHost}
	locks := b.TempDir()
	opts := func() []Option {
		return []Option{WithRunner(r), WithIndexCache(b.TempDir())}
	}
	// One lock outside the timing: the bare runs reuse its bases, debs and resolver.
	if err := LockAll(ctx, locks, imgs, opts()...); err != nil {
		b.Fatal(err)
	}
	torchSrv.reset()
	type bareJob struct{ apt, pip Job }
	var bare []bareJob
	for _, img := range imgs {
		l, err := lock.Read(lock.Path(locks, img.Name))
		if err != nil {
			b.Fatal(err)
		}
		aptScript, err := aptScript(img.Apt, img.Python)
		if err != nil {
			b.Fatal(err)
		}
		req := pipRequest{Requirements: append(append([]string{}, img.Pip...), "torch=="+img.Torch), Index: ps.URL + "/simple/", Python: img.Python, Resolver: l.Resolver}
		files, script, err := req.files()
		if err != nil {
			b.Fatal(err)
		}
		script = strings.Replace(script, `--index-url "$INDEX"`, `--index-url "$INDEX" --extra-index-url '`+l.PipIndexes[0]+`'`, 1)
		bare = append(bare, bareJob{
			apt: Job{Name: "apt resolve", Image: l.Base.Pull(), Script: aptScript},
			pip: Job{Name: "pip resolve", Image: l.Base.Pull(), Debs: l.Apt, Files: files, Script: script, Resolver: &l.Resolver},
		})
	}

	bigGets := func(gets map[string]int) (maxPerWheel, total int) {
		for f, n := range gets {
			if strings.HasPrefix(f, "torch-") && strings.HasSuffix(f, ".whl") {
				total += n
				maxPerWheel = max(maxPerWheel, n)
			}
		}
		return
	}
	var full, bareT time.Duration
	var lockMax, bareMax, lockTotal, bareTotal int
	var lockBytes, bareBytes int64
	sum := func(m map[string]int64) (n int64) {
		for _, v := range m {
			n += v
		}
		return
	}
	lockOnce := func() {
		t := time.Now()
		if err := LockAll(ctx, b.TempDir(), imgs, opts()...); err != nil {
			b.Fatal(err)
		}
		full += time.Since(t)
		by, gets := torchSrv.reset()
		m, n := bigGets(gets)
		lockMax, lockTotal, lockBytes = max(lockMax, m), lockTotal+n, lockBytes+sum(by)
	}
	bareOnce := func() {
		t := time.Now()
		for _, j := range bare {
			ta := time.Now()
			if _, err := r.Run(ctx, j.apt); err != nil {
				b.Fatal(err)
			}
			tp := time.Now()
			out, err := r.Run(ctx, j.pip)
			if err != nil {
				b.Fatal(err)
			}
			if rc := strings.TrimSpace(string(out["pip.rc"])); rc != "0" {
				b.Fatalf("bare pip failed:\n%s", out["pip.log"])
			}
			logs.From(ctx).Info("bare steps done", "apt_seconds", tp.Sub(ta).Seconds(), "pip_seconds", time.Since(tp).Seconds())
		}
		bareT += time.Since(t)
		by, gets := torchSrv.reset()
		m, n := bigGets(gets)
		bareMax, bareTotal, bareBytes = max(bareMax, m), bareTotal+n, bareBytes+sum(by)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			lockOnce()
			bareOnce()
		} else {
			bareOnce()
			lockOnce()
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(imgs)), "images")
	b.ReportMetric(full.Seconds()/n, "lock-s/op")
	b.ReportMetric(bareT.Seconds()/n, "bare-s/op")
	b.ReportMetric(full.Seconds()/bareT.Seconds(), "lock/bare")
	b.ReportMetric(float64(lockMax), "lock-max-fetches-per-big-wheel")
	b.ReportMetric(float64(lockTotal)/n, "lock-big-fetches/op")
	b.ReportMetric(float64(bareTotal)/n, "bare-big-fetches/op")
	b.ReportMetric(float64(lockBytes)/n/1e6, "lock-torch-index-MB/op")
	b.ReportMetric(float64(bareBytes)/n/1e6, "bare-torch-index-MB/op")
	if lockMax > 1 {
		b.Errorf("a big wheel left the torch index %d times in one lock run, want at most once", lockMax)
	}
}
