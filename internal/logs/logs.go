// Package logs carries a logger in a context so that libraries stay silent:
// they report progress to the logger they find, and only the CLI decides
// where (and whether) it is rendered.
package logs

import (
	"context"
	"io"
	"log/slog"
)

type key struct{}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// With returns a context that carries l.
func With(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, key{}, l)
}

// From returns the logger carried by ctx, or one that discards everything.
func From(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(key{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return discard
}
