package verify

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// batchRuntime is a BatchRuntime (like the Kubernetes Job) wrapped the way
// the runtimes package wraps a throwaway storage folder.
type batchRuntime struct {
	log    string
	err    error
	runs   int
	closed int
}

func (*batchRuntime) Name() string { return "batch" }
func (b *batchRuntime) Close() error {
	b.closed++
	return nil
}
func (b *batchRuntime) RunBatch(context.Context) ([]byte, error) {
	b.runs++
	return []byte(b.log), b.err
}

// TestRunBatch: Run runs a BatchRuntime's batch once, through a Wrapper,
// and evaluates every probe's line of it; a failed batch is a
// *NotRunError; timing the first step needs a runtime that runs probes one
// by one; and Run closes the runtime (and its wrapper) in every case.
func TestRunBatch(t *testing.T) {
	l := readLock(t, "testdata/h200-torch2.11-cu130.lock.json")
	out := machine(t, l, 2)
	var log strings.Builder
	for _, n := range []string{"env", "torch", "allreduce", "compile-cold", "compile-warm"} {
		log.WriteString(out[n] + "\n")
	}
	st, err := ReadyStorage(l)
	if err != nil {
		t.Fatal(err)
	}
	b := &batchRuntime{log: log.String()}
	res, err := Run(context.Background(), l, WithRuntime(st.Wrap(b)), WithGPUProber(nil))
	if err != nil || b.runs != 1 || b.closed != 1 || res.Runtime != "batch" || len(res.Host.GPUs) != 2 {
		t.Fatalf("Run(batch) = %v (runs %d, closed %d, runtime %q); want a pass from one batch, closed", err, b.runs, b.closed, res.Runtime)
	}
	if _, err := os.Stat(st.Dir); !os.IsNotExist(err) {
		t.Errorf("the wrapper's storage %s is left after Run: %v", st.Dir, err)
	}

	b = &batchRuntime{err: errors.New("the Job failed")}
	_, err = Run(context.Background(), l, WithRuntime(b), WithGPUProber(nil))
	var nr *NotRunError
	if !errors.As(err, &nr) || b.runs != 1 {
		t.Errorf("Run(failing batch) = %v (runs %d), want a *NotRunError after one run", err, b.runs)
	}

	b = &batchRuntime{log: log.String()}
	if _, err := Run(context.Background(), l, WithRuntime(b), WithStartup(true)); err == nil || b.runs != 0 || b.closed != 1 {
		t.Errorf("Run(batch, WithStartup) = %v (runs %d, closed %d), want an error before the batch, closed", err, b.runs, b.closed)
	}

	b = &batchRuntime{}
	if _, err := Run(context.Background(), l, WithRuntime(b), WithAllReduceIters(0, 0)); err == nil || b.closed != 1 {
		t.Errorf("Run(bad option) = %v (closed %d), want an error and the runtime closed", err, b.closed)
	}
	if _, err := Run(context.Background(), l); err == nil {
		t.Errorf("Run(no runtime) = nil error, want one")
	}
}
