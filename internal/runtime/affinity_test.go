package runtime

import (
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestEachThreadListsEveryThread(t *testing.T) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	self := unix.Gettid()
	var got []int
	if err := eachThread(func(tid int) { got = append(got, tid) }); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, tid := range got {
		seen[tid] = true
	}
	if !seen[self] {
		t.Errorf("eachThread listed %v, not the calling thread %d", got, self)
	}
	// Threads may come and go meanwhile (the Go runtime's): every one that
	// is in both listings proves the parsing; most must be.
	both := 0
	for _, e := range want {
		if n, err := strconv.Atoi(e.Name()); err == nil && seen[n] {
			both++
		}
	}
	if both == 0 || both < len(want)-2 {
		t.Errorf("eachThread listed %v; /proc/self/task has %d entries, %d of them listed", got, len(want), both)
	}
}

// lockThread locks the test's goroutine to its thread until the test ends
// and returns the thread's CPUs.
func lockThread(t *testing.T) unix.CPUSet {
	t.Helper()
	goruntime.LockOSThread()
	t.Cleanup(goruntime.UnlockOSThread)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	return set
}

func TestPinOthersKeepsTheCaller(t *testing.T) {
	before := lockThread(t)
	p := pinOthers()
	defer p.restoreAll()
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the caller's CPUs changed from %d to %d CPUs", before.Count(), after.Count())
	}
	if before.Count() < 2 {
		if p.pinned {
			t.Error("pinned with one CPU to run on")
		}
		return
	}
	if !p.pinned {
		t.Fatal("not pinned with two CPUs or more")
	}
	// Every other thread is on one CPU.
	self := unix.Gettid()
	_ = eachThread(func(tid int) {
		if tid == self {
			return
		}
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) != nil {
			return // gone meanwhile
		}
		if s.Count() != 1 {
			t.Errorf("thread %d runs on %d CPUs, want 1", tid, s.Count())
		}
	})
	p.restoreAll()
	_ = eachThread(func(tid int) {
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil && s != before {
			t.Errorf("thread %d runs on %d CPUs after restoreAll, want the %d it had", tid, s.Count(), before.Count())
		}
	})
}

func TestNotifyGivesTheCPUsBackWhenBusy(t *testing.T) {
	before := lockThread(t)
	if before.Count() < 2 {
		t.Skip("needs two CPUs")
	}
	// Every registration counts as slow: the second one must release.
	defer func(d time.Duration) { busyCPU = d }(busyCPU)
	busyCPU = 0
	p := pinOthers()
	defer p.restoreAll()
	if !p.pinned {
		t.Fatal("not pinned with two CPUs or more")
	}
	c := make(chan os.Signal, 4)
	defer signal.Stop(c)
	done := make(chan struct{})
	go func() { // from another thread, as Listen's goroutine does
		defer close(done)
		p.notify(c, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	}()
	<-done
	if !p.released {
		t.Fatal("three registrations slower than busyCPU, and the threads kept the single CPU")
	}
	_ = eachThread(func(tid int) {
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil && s != before {
			t.Errorf("thread %d runs on %d CPUs after the release, want the %d it had", tid, s.Count(), before.Count())
		}
	})
}
