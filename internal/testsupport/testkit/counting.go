package testkit

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// CountingHandler is a slog.Handler that writes nothing and counts what is
// asked of it: the records at Level and above it handles, and the loggers
// derived from it (With, WithGroup). A test sets it as the default logger
// to check that logging below the level costs a message handler nothing
// more than the level check. The zero value handles Info and above.
type CountingHandler struct {
	Level slog.Level

	handled, derived atomic.Int64
}

// Enabled reports whether level is at least h.Level.
func (h *CountingHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.Level
}

// Handle counts the record.
func (h *CountingHandler) Handle(context.Context, slog.Record) error {
	h.handled.Add(1)
	return nil
}

// WithAttrs counts a derived logger and returns h.
func (h *CountingHandler) WithAttrs([]slog.Attr) slog.Handler {
	h.derived.Add(1)
	return h
}

// WithGroup counts a derived logger and returns h.
func (h *CountingHandler) WithGroup(string) slog.Handler {
	h.derived.Add(1)
	return h
}

// Handled returns how many records h handled.
func (h *CountingHandler) Handled() int64 { return h.handled.Load() }

// Derived returns how many loggers were derived from h.
func (h *CountingHandler) Derived() int64 { return h.derived.Load() }
