package streamtest_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestLogRecorderKeepsEveryRecordWithItsAttributes(t *testing.T) {
	var out bytes.Buffer
	rec := streamtest.NewLogRecorder(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l := rec.Logger().With("subscription", "jobs")
	l.Debug("quiet", "n", 1)
	l.WithGroup("req").With("id", "r1").Warn("parked", "reason", "boom", slog.Group("g", "a", 1, "b", time.Second))

	recs := rec.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 (every level is kept)", len(recs))
	}
	if r := recs[0]; r.Level != slog.LevelDebug || r.Message != "quiet" || r.Attr("subscription") != "jobs" || r.Attr("n") != "1" {
		t.Errorf("first record %v", r)
	}
	r := recs[1]
	want := map[string]string{"subscription": "jobs", "req.id": "r1", "req.reason": "boom", "req.g.a": "1", "req.g.b": "1s"}
	for k, v := range want {
		if r.Attr(k) != v {
			t.Errorf("attribute %s = %q, want %q (record %v)", k, r.Attr(k), v, r)
		}
	}
	if got := rec.Find(slog.LevelWarn, "parked"); len(got) != 1 {
		t.Errorf("Find(warn, parked) found %d", len(got))
	}
	if got := rec.Find(slog.LevelInfo, "parked"); len(got) != 0 {
		t.Errorf("Find(info, parked) found %d", len(got))
	}
	if s := r.String(); !strings.HasPrefix(s, `level=WARN msg="parked"`) || !strings.Contains(s, `req.reason="boom"`) {
		t.Errorf("String() = %s", s)
	}
	// The forward handler got only what its level lets through, with the
	// logger's attributes and groups.
	fwd := out.String()
	if strings.Contains(fwd, "quiet") {
		t.Errorf("forwarded a debug record: %s", fwd)
	}
	if !strings.Contains(fwd, "subscription=jobs") || !strings.Contains(fwd, "req.id=r1") || !strings.Contains(fwd, "req.reason=boom") {
		t.Errorf("forwarded %q, want the warning with its attributes", fwd)
	}
}

func TestLogRecorderWithoutForwardOnlyRecords(t *testing.T) {
	rec := streamtest.NewLogRecorder(nil)
	rec.Logger().WithGroup("").Info("hello")
	if recs := rec.Records(); len(recs) != 1 || recs[0].Message != "hello" {
		t.Fatalf("records %v", recs)
	}
}

func TestLogRecorderContainingMatchesPartOfTheMessageAtAnyLevel(t *testing.T) {
	rec := streamtest.NewLogRecorder(nil)
	l := rec.Logger()
	l.Warn("zeromq: cannot reach queue; retrying until it answers", "queue", "jobs")
	l.Debug("cannot reach queue again", "queue", "invoices")
	l.Info("queue reached")

	got := rec.Containing("cannot reach queue")
	if len(got) != 2 {
		t.Fatalf("Containing found %d records, want 2: %v", len(got), got)
	}
	if got[0].Level != slog.LevelWarn || got[0].Attr("queue") != "jobs" || got[1].Level != slog.LevelDebug || got[1].Attr("queue") != "invoices" {
		t.Errorf("Containing = %v, want the warning about jobs, then the debug line about invoices", got)
	}
	if got := rec.Containing("nothing like it"); len(got) != 0 {
		t.Errorf("Containing(nothing like it) = %v", got)
	}
}

func TestLogRecorderStringIsEveryRecordOneALine(t *testing.T) {
	rec := streamtest.NewLogRecorder(nil)
	if s := rec.String(); s != "" {
		t.Fatalf("String() with no records = %q, want empty", s)
	}
	rec.Logger().Info("first", "n", 1)
	rec.Logger().Warn("second", "reason", "boom")
	want := "level=INFO msg=\"first\" n=\"1\"\nlevel=WARN msg=\"second\" reason=\"boom\"\n"
	if s := rec.String(); s != want {
		t.Errorf("String() = %q, want %q", s, want)
	}
}
