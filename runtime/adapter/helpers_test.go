package adapter_test

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/streamgen/streamgen/runtime/streamtest"
)

// logCapture is streamtest.LogRecorder, the recorder of every test, with
// the lower-case view the Consumer tests read it through.
type logCapture struct{ rec *streamtest.LogRecorder }

// capturedRecord is one record of a logCapture.
type capturedRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r capturedRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", r.level, r.msg)
	for _, k := range slices.Sorted(maps.Keys(r.attrs)) {
		fmt.Fprintf(&b, " %s=%q", k, r.attrs[k])
	}
	return b.String()
}

func newLogCapture() *logCapture { return &logCapture{rec: streamtest.NewLogRecorder(nil)} }

func (h *logCapture) logger() *slog.Logger { return h.rec.Logger() }

func (h *logCapture) all() []capturedRecord {
	var out []capturedRecord
	for _, r := range h.rec.Records() {
		out = append(out, capturedRecord{level: r.Level, msg: r.Message, attrs: r.Attrs})
	}
	return out
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
