package runtime

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The helper process: this test binary run with IMAGECTL_FAULT_HELPER set.
// It calls Listen as the init does, then either reports each signal it
// receives ("stray") or faults for real ("segv", "bus").
func init() {
	mode := os.Getenv("IMAGECTL_FAULT_HELPER")
	if mode == "" {
		return
	}
	p, _, err := Listen(ListenOptions{})
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	switch mode {
	case "stray":
		fmt.Println("ready")
		for s := range p.forward {
			fmt.Println("got", int(s.(syscall.Signal)))
		}
	case "segv":
		var p *int
		fmt.Println(*(*int)(unsafe.Pointer(p)))
	case "bus":
		// A mapping past the end of its file: touching it is a real SIGBUS
		// from the kernel (si_code BUS_ADRERR).
		f, _ := os.CreateTemp("", "bus")
		defer os.Remove(f.Name())
		b, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			fmt.Println("mmap:", err)
			os.Exit(1)
		}
		fmt.Println(b[0])
	}
	os.Exit(0)
}

func helper(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "IMAGECTL_FAULT_HELPER="+mode)
	return cmd
}

// TestStrayFaultSignalsAreCaught sends the init's Listen the seven
// synchronous-fault signals with kill(2), as a stray `kill -SEGV 1` would:
// each must arrive on the forwarding channel and the process must live on.
func TestStrayFaultSignalsAreCaught(t *testing.T) {
	cmd := helper(t, "stray")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := bufio.NewScanner(out)
	if !r.Scan() || r.Text() != "ready" {
		t.Fatalf("helper did not start: %q %s", r.Text(), stderr.String())
	}
	for _, sig := range []syscall.Signal{syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS} {
		if err := syscall.Kill(cmd.Process.Pid, sig); err != nil {
			t.Fatal(err)
		}
		if !r.Scan() {
			t.Fatalf("after kill -%s the process died: %s", SignalName(sig), stderr.String())
		}
		if got, want := r.Text(), fmt.Sprintf("got %d", sig); got != want {
			t.Errorf("after kill -%s: %q, want %q", SignalName(sig), got, want)
		}
	}
}

// TestRealFaultsStillCrash: a real fault in the init is not a signal to
// forward; the Go runtime still crashes loudly (exit 2 and a traceback).
func TestRealFaultsStillCrash(t *testing.T) {
	for mode, want := range map[string]string{"segv": "SIGSEGV", "bus": "SIGBUS"} {
		t.Run(mode, func(t *testing.T) {
			cmd := helper(t, mode)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("a real %s did not crash the process", want)
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Errorf("a real %s: %v, want exit 2", want, err)
			}
			if s := stderr.String(); !strings.Contains(s, "signal "+want) || !strings.Contains(s, "goroutine ") {
				t.Errorf("a real %s: stderr %q, want the runtime's crash report naming it", want, s)
			}
		})
	}
}
