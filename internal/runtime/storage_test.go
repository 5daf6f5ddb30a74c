package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"imagectl/internal/exitcode"
)

// fakeMounts writes <proc>/self/mountinfo with the root and, if storage is
// set, a mount at storage.
func fakeMounts(t testing.TB, proc, storage string) {
	t.Helper()
	s := "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
	if storage != "" {
		s += "40 27 0:50 / " + storage + " rw,relatime - nfs4 10.0.0.5:/export rw,vers=4.1\n"
	}
	tmp := filepath.Join(proc, "self", "mountinfo.tmp")
	write(t, tmp, s)
	if err := os.Rename(tmp, filepath.Join(proc, "self", "mountinfo")); err != nil {
		t.Fatal(err)
	}
}

// onNotReady calls f after each check that found the storage not ready.
func onNotReady(f func()) Option {
	return func(o *options) error { o.notReady = f; return nil }
}

func TestWaitStorageAppearsLater(t *testing.T) {
	proc, root := t.TempDir(), t.TempDir()
	storage := filepath.Join(root, "storage")
	ready := filepath.Join(storage, ".ready")
	fakeMounts(t, proc, "")
	// The storage appears after the second check that found it missing:
	// WaitStorage must keep polling, and must see it at the next check.
	checks := 0
	appear := func() {
		if checks++; checks != 2 {
			return
		}
		if err := os.MkdirAll(storage, 0o755); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			t.Error(err)
		}
		fakeMounts(t, proc, storage)
	}
	s := Storage{Path: storage, ReadyFile: ready, Timeout: Duration(time.Minute), Required: true}
	st, err := WaitStorage(context.Background(), s, WithProcRoot(proc), WithPollInterval(time.Millisecond), onNotReady(appear))
	if err != nil {
		t.Fatalf("WaitStorage: %v", err)
	}
	if !st.Ready || st.Mount == nil || st.Mount.FSType != "nfs4" {
		t.Errorf("WaitStorage = %+v, want ready on nfs4", st)
	}
	if checks != 2 {
		t.Errorf("WaitStorage found the storage missing %d times, want 2 (it appeared after the second)", checks)
	}
	if st.Waited <= 0 {
		t.Errorf("WaitStorage state Waited = %v, want the time it waited", st.Waited)
	}
}

func TestWaitStorageNever(t *testing.T) {
	proc, root := t.TempDir(), t.TempDir()
	fakeMounts(t, proc, "")
	storage := filepath.Join(root, "storage")
	s := Storage{Path: storage, ReadyFile: filepath.Join(storage, ".ready"), Timeout: Duration(700 * time.Millisecond), Required: true}
	checks := 0
	start := time.Now()
	_, err := WaitStorage(context.Background(), s, WithProcRoot(proc), WithPollInterval(20*time.Millisecond), onNotReady(func() { checks++ }))
	took := time.Since(start)
	var nr *StorageNotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("WaitStorage = %v, want *StorageNotReadyError", err)
	}
	if exitcode.Code(err) != 75 {
		t.Errorf("exit code = %d, want 75", exitcode.Code(err))
	}
	// It gives up at the deadline, not before, having checked more than
	// once (an upper bound on the wall time would measure the machine).
	if took < 700*time.Millisecond || checks < 2 {
		t.Errorf("WaitStorage gave up after %v and %d checks, want at least 700ms and two checks", took, checks)
	}
	msg := err.Error()
	for _, want := range []string{storage + " to be a mount point", ".ready to exist", "700ms"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message %q is more than one line", msg)
	}

	// Optional storage: no error, not ready.
	s.Required = false
	st, err := WaitStorage(context.Background(), s, WithProcRoot(proc), WithPollInterval(20*time.Millisecond))
	if err != nil || st.Ready || !st.Configured {
		t.Errorf("WaitStorage(optional) = %+v, %v; want configured, not ready, nil", st, err)
	}
}

func TestWaitStorageCancelled(t *testing.T) {
	proc := t.TempDir()
	fakeMounts(t, proc, "")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := WaitStorage(ctx, Storage{Path: "/nowhere", Timeout: Duration(time.Minute)}, WithProcRoot(proc))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitStorage(cancelled) = %v, want deadline exceeded", err)
	}
}
