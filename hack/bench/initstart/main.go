// Command initstart measures how long an entrypoint takes from its own exec
// to the exec of the user's command: imagectl-init against tini running the
// same command and against a bash entrypoint doing the same start-up steps.
//
// The user's command is a 4-instruction static ELF written here (amd64): its
// first act is to write one byte to fd 3, a pipe this harness holds the read
// end of. The time from just before starting the entrypoint to that byte is
// the entrypoint's start-up cost plus one fork/exec; the same measured for the
// bare command (no entrypoint) is subtracted to give the overhead.
//
//	go run ./hack/bench/initstart -init bin/imagectl-init -n 200
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	initrt "imagectl/internal/runtime"
)

func main() {
	initBin := flag.String("init", "bin/imagectl-init", "the imagectl-init binary")
	tiniBin := flag.String("tini", "tini", "the tini binary")
	n := flag.Int("n", 200, "runs per entrypoint")
	baseDir := flag.String("dir", "", "where the storage directory goes (default: the system temp dir)")
	goMin := flag.String("gomin", "", "a prebuilt go-minimal entrypoint (default: built here with go)")
	goSig := flag.String("gosig", "", "a prebuilt go-signals entrypoint (default: built here with go)")
	floorsTo := flag.String("floors", "", "build the go-minimal and go-signals entrypoints into this directory (bench-gomin, bench-gosig) and exit: for a machine without a Go toolchain")
	var also multiFlag
	flag.Var(&also, "also", "NAME=PATH: another init binary to time with every step, in the same interleaved run (repeatable; e.g. the init before a change)")
	flag.Parse()
	if *floorsTo != "" {
		buildFloors(*floorsTo)
		return
	}
	if runtime.GOARCH != "amd64" {
		fatal("the stamp command is amd64 machine code; this machine is " + runtime.GOARCH)
	}
	tini, err := exec.LookPath(*tiniBin)
	if err != nil {
		fatal("tini not found (apt-get install tini): " + err.Error())
	}
	initPath, err := filepath.Abs(*initBin)
	if err != nil {
		fatal(err.Error())
	}
	dir, err := os.MkdirTemp(*baseDir, "initstart-")
	if err != nil {
		fatal(err.Error())
	}
	defer os.RemoveAll(dir)
	stamp := filepath.Join(dir, "stamp")
	if err := os.WriteFile(stamp, stampELF(), 0o755); err != nil {
		fatal(err.Error())
	}
	cfg, env, script := setup(dir)
	must(os.WriteFile(filepath.Join(dir, "empty.json"), []byte("{}"), 0o644))

	variants := []struct {
		name string
		argv []string
		env  []string
	}{
		{"direct", []string{stamp}, env},
		{"tini", []string{tini, "-s", "--", stamp}, env},
		{"imagectl-init", []string{initPath, "--", stamp}, append(env, "IMAGECTL_RUNTIME_CONFIG="+cfg)},
		{"bash", []string{"/bin/bash", script, stamp}, env},
		{"init-no-config", []string{initPath, "--", stamp}, append(env, "IMAGECTL_RUNTIME_CONFIG="+filepath.Join(dir, "empty.json"))},
		{"go-minimal", []string{orBuild(*goMin, dir, "gomin", goMinimalSrc), stamp}, env},
		// The same steps without the fingerprint: what writing it costs
		// (collection, encoding/json, a temp file and a rename).
		{"init-no-fp", []string{initPath, "--", stamp}, append(env, "IMAGECTL_RUNTIME_CONFIG="+cfg, "IMAGECTL_FINGERPRINT_PATH=off")},
		// The floor of a Go init that keeps the lossless window: it catches
		// every signal the init catches before it forks the command.
		{"go-signals", []string{orBuild(*goSig, dir, "gosig", goSignalsSrc()), stamp}, env},
	}
	for _, a := range also {
		name, path, ok := strings.Cut(a, "=")
		if !ok {
			fatal("-also " + a + ": want NAME=PATH")
		}
		abs, err := filepath.Abs(path)
		must(err)
		variants = append(variants, struct {
			name string
			argv []string
			env  []string
		}{name, []string{abs, "--", stamp}, append(env, "IMAGECTL_RUNTIME_CONFIG="+cfg)})
	}
	samples := make([][]time.Duration, len(variants))
	for i := 0; i < *n+5; i++ {
		// Interleaved, so load drift hits all alike, and in an order that
		// rotates each round, so that no entrypoint always runs right
		// after the same one (the bash one starts a dozen processes).
		for k := range variants {
			v := (i + k) % len(variants)
			vr := variants[v]
			d, err := measure(vr.argv, vr.env)
			if err != nil {
				fatal(fmt.Sprintf("%s: %v", vr.name, err))
			}
			if i >= 5 { // warm-up runs are dropped
				samples[v] = append(samples[v], d)
			}
		}
	}
	med := make([]time.Duration, len(variants))
	// p10 is there for a loaded machine, where the median mostly measures
	// the wait for a CPU: the fastest tenth are the starts that got one.
	fmt.Printf("exec of the entrypoint -> exec of the command, %d runs each (median, p90, p10)\n", *n)
	for v, vr := range variants {
		med[v] = pct(samples[v], 50)
		fmt.Printf("  %-14s %8.3f ms  %8.3f ms  %8.3f ms\n", vr.name, ms(med[v]), ms(pct(samples[v], 90)), ms(pct(samples[v], 10)))
	}
	base := med[0]
	over := func(v int) time.Duration { return max(med[v]-base, 0) }
	fmt.Printf("overhead over the bare command: tini %.3f ms, imagectl-init %.3f ms, bash %.3f ms\n", ms(over(1)), ms(over(2)), ms(over(3)))
	fmt.Printf("ratio imagectl-init/tini: %.2f (whole), %.2f (overhead)   target <= 2, absolute < 10 ms\n", ratio(med[2], med[1]), ratio(over(2), over(1)))
	fmt.Printf("ratio bash/imagectl-init: %.2f (whole), %.2f (overhead)\n", ratio(med[3], med[2]), ratio(over(3), over(2)))
	fmt.Printf("imagectl-init over a Go program that only fork/execs (the Go runtime's floor): %.3f ms; with no config: %.3f ms\n", ms(med[2]-med[5]), ms(med[4]-med[5]))
	fmt.Printf("the fingerprint (collected, encoded with encoding/json, written and renamed): %.3f ms\n", ms(med[2]-med[6]))
	fmt.Printf("floors: a Go program that only fork/execs %.2fx tini; one that first catches the init's %d signals %.2fx tini\n", ratio(med[5], med[1]), len(caught()), ratio(med[7], med[1]))
	for v := 8; v < len(variants); v++ {
		fmt.Printf("ratio %s/tini: %.2f (whole), %.2f (overhead)\n", variants[v].name, ratio(med[v], med[1]), ratio(max(med[v]-base, 0), over(1)))
	}
	if ms(med[2]) >= 10 {
		fmt.Printf("FAIL: imagectl-init takes %.3f ms, over the 10 ms budget\n", ms(med[2]))
		os.Exit(1)
	}
}

// setup writes ready storage, the init's config and the bash entrypoint
// doing the same steps: storage ready file, swappiness (read only: the value
// asked is the current one, so the host is never changed), /dev/shm size,
// TMPDIR and caches 0775 on storage, driver floor when a driver is present,
// fingerprint.
func setup(dir string) (cfgPath string, env []string, script string) {
	storage := filepath.Join(dir, "storage")
	must(os.MkdirAll(storage, 0o755))
	must(os.WriteFile(filepath.Join(storage, ".ready"), nil, 0o644))
	swap := "60"
	if b, err := os.ReadFile("/proc/sys/vm/swappiness"); err == nil {
		swap = strings.TrimSpace(string(b))
	}
	floor := ""
	if _, err := os.Stat("/proc/driver/nvidia/version"); err == nil {
		floor = `"driver_floor": "525.60.13",`
	}
	cfgPath = filepath.Join(dir, "runtime.json")
	must(os.WriteFile(cfgPath, []byte(fmt.Sprintf(`{
  "storage": {"ready_file": %q, "timeout": "5s", "required": true},
  "swappiness": %s,
  "min_shm_bytes": 1048576,
  "tmpdir": %q,
  "caches": {"inductor": %q, "triton": %q, "hf": %q, "cuda": %q},
  %s
  "fingerprint_path": %q,
  "quiet": true
}`, filepath.Join(storage, ".ready"), swap, filepath.Join(storage, "tmp"), filepath.Join(storage, "inductor"),
		filepath.Join(storage, "triton"), filepath.Join(storage, "hf"), filepath.Join(storage, "cuda"), floor,
		filepath.Join(storage, "fingerprint.json"))), 0o644))
	script = filepath.Join(dir, "entrypoint.sh")
	must(os.WriteFile(script, []byte(`#!/bin/bash
set -eu
S=`+storage+`
for i in $(seq 50); do [ -f "$S/.ready" ] && break; sleep 0.1; done
[ -f "$S/.ready" ] || { echo "storage not ready" >&2; exit 75; }
want=`+swap+`
have=$(cat /proc/sys/vm/swappiness)
[ "$have" = "$want" ] || echo "$want" > /proc/sys/vm/swappiness || echo "swappiness read-only" >&2
shm=$(stat -f -c '%b*%S' /dev/shm); shm=$((shm))
[ "$shm" -ge 1048576 ] || echo "shm too small" >&2
for d in tmp inductor triton hf cuda; do mkdir -p "$S/$d"; chmod 0775 "$S/$d"; done
export TMPDIR=$S/tmp TORCHINDUCTOR_CACHE_DIR=$S/inductor TRITON_CACHE_DIR=$S/triton HF_HOME=$S/hf CUDA_CACHE_PATH=$S/cuda
drv=
if [ -r /proc/driver/nvidia/version ]; then
  drv=$(head -1 /proc/driver/nvidia/version | grep -o '[0-9][0-9]*\.[0-9][0-9.]*' | head -1)
  [ "$(printf '%s\n%s\n' 525.60.13 "$drv" | sort -V | head -1)" = 525.60.13 ] || echo "driver $drv below 525.60.13" >&2
fi
printf '{"driver":"%s","swappiness":%s,"shm":%s,"storage":"%s"}\n' "$drv" "$have" "$shm" "$S" > "$S/fingerprint.sh.json"
exec "$@"
`), 0o755))
	env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	return cfgPath, env, script
}

// goEntrypointSrc is a Go entrypoint that runs prelude, then fork/execs
// the command and waits for it.
func goEntrypointSrc(imports, prelude string) string {
	return `package main

import (
	"os"
	"syscall"` + imports + `
)

func main() {` + prelude + `
	pid, err := syscall.ForkExec(os.Args[1], os.Args[1:], &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		os.Exit(127)
	}
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, 0, nil)
	os.Exit(ws.ExitStatus())
}
`
}

// goMinimalSrc is the smallest Go entrypoint: fork/exec the command and
// wait. It is the floor any Go init pays (runtime start-up) on this machine.
var goMinimalSrc = goEntrypointSrc("", "")

// caught is every signal imagectl-init catches before it starts the
// command: the forwarded ones, SIGCHLD, SIGTTIN and SIGTTOU.
func caught() []syscall.Signal {
	return append(initrt.ForwardedSignals(), syscall.SIGCHLD, syscall.SIGTTIN, syscall.SIGTTOU)
}

// goSignalsSrc is go-minimal that first catches (os/signal) every signal
// the init catches, as the init must before the command exists so that no
// signal sent after the command started is lost: each new signal is a
// round trip to the Go runtime's signal-mask thread. It is the floor of a
// Go init that keeps that behaviour.
func goSignalsSrc() string {
	var nums []string
	for _, s := range caught() {
		nums = append(nums, strconv.Itoa(int(s)))
	}
	return goEntrypointSrc(`
	"os/signal"`, `
	c := make(chan os.Signal, 128)
	for _, n := range []int{`+strings.Join(nums, ", ")+`} {
		signal.Notify(c, syscall.Signal(n))
	}`)
}

// buildFloors writes the two Go floors, built, into dir.
func buildFloors(dir string) {
	tmp, err := os.MkdirTemp("", "initstart-floors-")
	must(err)
	defer os.RemoveAll(tmp)
	for name, src := range map[string]string{"gomin": goMinimalSrc, "gosig": goSignalsSrc()} {
		must(os.Rename(orBuild("", tmp, name, src), filepath.Join(dir, "bench-"+name)))
	}
}

// orBuild returns prebuilt when set, else builds src as a static binary.
func orBuild(prebuilt, dir, name, src string) string {
	if prebuilt != "" {
		abs, err := filepath.Abs(prebuilt)
		must(err)
		return abs
	}
	srcDir := filepath.Join(dir, name)
	must(os.MkdirAll(srcDir, 0o755))
	must(os.WriteFile(filepath.Join(srcDir, "go.mod"), []byte("module "+name+"\n\ngo 1.26\n"), 0o644))
	must(os.WriteFile(filepath.Join(srcDir, "main.go"), []byte(src), 0o644))
	bin := filepath.Join(dir, name+"-bin")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Dir = srcDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		fatal(fmt.Sprintf("building the %s entrypoint: %v: %s", name, err, out))
	}
	return bin
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// measure starts argv with a pipe on fd 3 and returns the time until the
// stamp command writes its byte there.
func measure(argv, env []string) (time.Duration, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{w}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		w.Close()
		return 0, err
	}
	w.Close()
	buf := make([]byte, 1)
	_, rerr := r.Read(buf)
	took := time.Since(start)
	werr := cmd.Wait()
	if rerr != nil || werr != nil || stderr.Len() > 0 {
		return 0, fmt.Errorf("read %v, exit %v, stderr %q", rerr, werr, stderr.String())
	}
	return took, nil
}

// stampELF is a minimal static x86-64 ELF: write(3, "x", 1); exit(0).
func stampELF() []byte {
	const base = 0x400000
	code := []byte{
		0xb8, 0x01, 0x00, 0x00, 0x00, // mov eax, 1 (write)
		0xbf, 0x03, 0x00, 0x00, 0x00, // mov edi, 3
		0x48, 0x8d, 0x35, 0x11, 0x00, 0x00, 0x00, // lea rsi, [rip+17] -> the 'x'
		0xba, 0x01, 0x00, 0x00, 0x00, // mov edx, 1
		0x0f, 0x05, // syscall
		0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60 (exit)
		0x31, 0xff, // xor edi, edi
		0x0f, 0x05, // syscall
		'x',
	}
	const hdr = 64 + 56
	b := make([]byte, hdr, hdr+len(code))
	le := binary.LittleEndian
	copy(b, []byte{0x7f, 'E', 'L', 'F', 2, 1, 1})
	le.PutUint16(b[16:], 2)        // ET_EXEC
	le.PutUint16(b[18:], 0x3e)     // x86-64
	le.PutUint32(b[20:], 1)        // version
	le.PutUint64(b[24:], base+hdr) // entry
	le.PutUint64(b[32:], 64)       // phoff
	le.PutUint16(b[52:], 64)       // ehsize
	le.PutUint16(b[54:], 56)       // phentsize
	le.PutUint16(b[56:], 1)        // phnum
	p := b[64:]
	le.PutUint32(p[0:], 1)                      // PT_LOAD
	le.PutUint32(p[4:], 5)                      // R+X
	le.PutUint64(p[16:], base)                  // vaddr
	le.PutUint64(p[24:], base)                  // paddr
	le.PutUint64(p[32:], uint64(hdr+len(code))) // filesz
	le.PutUint64(p[40:], uint64(hdr+len(code))) // memsz
	le.PutUint64(p[48:], 0x1000)                // align
	return append(b, code...)
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func must(err error) {
	if err != nil {
		fatal(err.Error())
	}
}

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, "initstart:", msg)
	os.Exit(1)
}
