package streamtest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// LogRecord is one captured log line.
type LogRecord struct {
	Time    time.Time
	Level   slog.Level
	Message string
	// Attrs holds every attribute as text, the logger's own (With) included.
	// Attributes inside a group are named "group.key".
	Attrs map[string]string
}

// Attr returns the text of the attribute key, or "".
func (r LogRecord) Attr(key string) string { return r.Attrs[key] }

// String writes the record the way slog's text handler would, keys sorted.
func (r LogRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "level=%s msg=%q", r.Level, r.Message)
	keys := make([]string, 0, len(r.Attrs))
	for k := range r.Attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, r.Attrs[k])
	}
	return b.String()
}

// LogRecorder keeps every record logged through its Handler, at every
// level, so a test can assert on warnings: that a dropped message was logged
// with its subscription, message id and reason, for example. It can also
// pass each record on to another handler, such as one writing to the test's
// output.
type LogRecorder struct {
	forward slog.Handler

	mu      sync.Mutex
	records []LogRecord
}

// NewLogRecorder returns a recorder that also passes records on to forward,
// unless forward is nil.
func NewLogRecorder(forward slog.Handler) *LogRecorder {
	return &LogRecorder{forward: forward}
}

// Handler returns the slog.Handler that records into r.
func (r *LogRecorder) Handler() slog.Handler {
	return &recordingHandler{rec: r, forward: r.forward}
}

// Logger returns a logger that records into r.
func (r *LogRecorder) Logger() *slog.Logger { return slog.New(r.Handler()) }

// Records returns a copy of everything recorded so far, in logging order.
func (r *LogRecorder) Records() []LogRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

// Find returns the records at level with message msg, in logging order.
func (r *LogRecorder) Find(level slog.Level, msg string) []LogRecord {
	var out []LogRecord
	for _, rec := range r.Records() {
		if rec.Level == level && rec.Message == msg {
			out = append(out, rec)
		}
	}
	return out
}

// Containing returns the records, at any level, whose message contains
// text, in logging order: "cannot reach queue" finds the adapter's longer
// warning about it.
func (r *LogRecorder) Containing(text string) []LogRecord {
	var out []LogRecord
	for _, rec := range r.Records() {
		if strings.Contains(rec.Message, text) {
			out = append(out, rec)
		}
	}
	return out
}

// String returns every record so far, one a line in logging order, as
// LogRecord.String writes it: for a failing test's message.
func (r *LogRecorder) String() string {
	var b strings.Builder
	for _, rec := range r.Records() {
		b.WriteString(rec.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func (r *LogRecorder) add(rec LogRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
}

type recordingHandler struct {
	rec     *LogRecorder
	forward slog.Handler
	prefix  string      // open groups, "a.b."
	attrs   []slog.Attr // from WithAttrs, keys already prefixed
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	rec := LogRecord{Time: r.Time, Level: r.Level, Message: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		addAttr(rec.Attrs, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		addAttr(rec.Attrs, h.prefix, a)
		return true
	})
	h.rec.add(rec)
	if h.forward != nil && h.forward.Enabled(ctx, r.Level) {
		return h.forward.Handle(ctx, r)
	}
	return nil
}

func (h *recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = slices.Clone(h.attrs)
	for _, a := range attrs {
		a.Key = h.prefix + a.Key
		c.attrs = append(c.attrs, a)
	}
	if h.forward != nil {
		c.forward = h.forward.WithAttrs(attrs)
	}
	return &c
}

func (h *recordingHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	if h.forward != nil {
		c.forward = h.forward.WithGroup(name)
	}
	return &c
}

func addAttr(into map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			addAttr(into, p, g)
		}
		return
	}
	if a.Key == "" {
		return
	}
	into[prefix+a.Key] = v.String()
}
