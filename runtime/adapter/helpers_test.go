package adapter_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// capturedRecord is one log record with its attributes as text, the
// logger's own (With) included.
type capturedRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r capturedRecord) String() string {
	keys := make([]string, 0, len(r.attrs))
	for k := range r.attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", r.level, r.msg)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, r.attrs[k])
	}
	return b.String()
}

// logCapture is a slog.Handler that keeps every record. It flattens no
// groups: the runtime logs none.
type logCapture struct {
	mu      *sync.Mutex
	records *[]capturedRecord
	with    []slog.Attr
}

func newLogCapture() *logCapture {
	return &logCapture{mu: &sync.Mutex{}, records: &[]capturedRecord{}}
}

func (h *logCapture) logger() *slog.Logger { return slog.New(h) }

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := capturedRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.with {
		rec.attrs[a.Key] = a.Value.Resolve().String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.Resolve().String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, rec)
	return nil
}

func (h *logCapture) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.with = append(slices.Clone(h.with), attrs...)
	return &c
}

func (h *logCapture) WithGroup(string) slog.Handler { return h }

func (h *logCapture) all() []capturedRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.records)
}

// find returns the records with message msg.
func (h *logCapture) find(msg string) []capturedRecord {
	var out []capturedRecord
	for _, r := range h.all() {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}
