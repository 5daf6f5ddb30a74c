package exitcode

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestFromContext(t *testing.T) {
	interrupted := func() context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&Interrupt{Signal: syscall.SIGTERM})
		return ctx
	}
	stopped := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	refused := Wrap(PromotionRefused, errors.New("gate"))
	canceled := fmt.Errorf("building demo: %w", context.Canceled)
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		wantCode int
		wantMsg  string
	}{
		{"running, nil", context.Background(), nil, OK, ""},
		{"running, refused", context.Background(), refused, PromotionRefused, "gate"},
		{"stopped, canceled", stopped(), canceled, Failure, "building demo: context canceled"},
		{"interrupted, canceled", interrupted(), canceled, Interrupted, "interrupted by SIGTERM: building demo: context canceled"},
		{"interrupted, refused", interrupted(), refused, Interrupted, "interrupted by SIGTERM: gate"},
		{"interrupted, nil", interrupted(), nil, Interrupted, "interrupted by SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := FromContext(tc.ctx, tc.err)
			if got := Code(err); got != tc.wantCode {
				t.Errorf("Code(FromContext(%v)) = %d, want %d", tc.err, got, tc.wantCode)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if msg != tc.wantMsg {
				t.Errorf("FromContext(%v) = %q, want %q", tc.err, msg, tc.wantMsg)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("FromContext(%v) = %v, which does not wrap it", tc.err, err)
			}
		})
	}
}
