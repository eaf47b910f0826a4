package rabbitmq

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A wait queue counts as stalled once copies sent into it are overdue by
// stallAfter with nothing coming back from it since; a copy that comes
// back, whichever worker sent it, ends the stall, with a log line each
// way. Copies not yet due, or overdue by less, are no stall.
func TestWaitWatchFindsAWaitQueueWhoseCopiesStopComingBack(t *testing.T) {
	testkit.NoLeaks(t)
	logs := streamtest.NewLogRecorder(slog.DiscardHandler)
	w := newWaitWatch("jobs", []adapter.WaitQueue{{Name: "jobs.retry", TTL: time.Second}}, 30*time.Second, logs.Logger())
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	w.sent("jobs.retry", at(0))
	w.sent("jobs.retry", at(2*time.Second))
	w.sent("elsewhere", at(0)) // not a wait queue of this subscription
	if got := w.check(at(30 * time.Second)); len(got) != 0 {
		t.Errorf("overdue by 29 s: %q, want no stall", got)
	}
	w.cameBack("jobs.retry", at(1500*time.Millisecond)) // the first came back; the second is not due yet
	if got := w.check(at(32 * time.Second)); len(got) != 0 {
		t.Errorf("the second overdue by 29 s: %q, want no stall", got)
	}
	got := w.check(at(34 * time.Second))
	want := `wait queue "jobs.retry": 1 retry copies of "jobs" are overdue, the oldest by 31s (their delay is 1s), and none has come back since`
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Fatalf("the second overdue by 31 s: %q, want %q", got, want)
	}
	w.sent("jobs.retry", at(35*time.Second))
	if got := w.check(at(40 * time.Second)); len(got) != 1 {
		t.Errorf("still stalled: %q, want one warning", got)
	}
	warned := logs.Find(slog.LevelWarn, "rabbitmq: retry copies do not come back from their wait queue: the broker holds them (a quorum queue whose leader was lost can hold them for minutes), or they wait behind a backlog")
	if len(warned) != 1 || warned[0].Attr("queue") != "jobs.retry" || warned[0].Attr("subscription") != "jobs" || warned[0].Attr("overdue") != "1" {
		t.Errorf("stall logged as %v, want one warning naming the queue", warned)
	}

	w.cameBack("jobs.retry", at(50*time.Second)) // another worker's copy, say: the queue moves again
	if got := w.check(at(51 * time.Second)); len(got) != 0 {
		t.Errorf("after a copy came back: %q, want no stall", got)
	}
	back := logs.Find(slog.LevelInfo, "rabbitmq: retry copies come back from their wait queue again")
	if len(back) != 1 || back[0].Attr("stalled_for") != "16s" {
		t.Errorf("the end of the stall logged as %v, want one line with stalled_for=16s", back)
	}
}

// A copy can come back before its confirm is handled: one that came back
// since it was due accounts for it, and no stall is reported.
func TestWaitWatchCountsACopyBackBeforeItsConfirm(t *testing.T) {
	w := newWaitWatch("jobs", []adapter.WaitQueue{{Name: "jobs.retry", TTL: 200 * time.Millisecond}}, 30*time.Second, slog.New(slog.DiscardHandler))
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	w.cameBack("jobs.retry", t0.Add(250*time.Millisecond)) // back, 50 ms after its TTL
	w.sent("jobs.retry", t0)                               // its confirm, handled later
	if got := w.check(t0.Add(time.Minute)); len(got) != 0 {
		t.Errorf("a copy back before its confirm was handled: %q, want no stall", got)
	}
}

func TestCameBackFrom(t *testing.T) {
	isWait := func(q string) bool { return q == "jobs.retry" }
	tests := []struct {
		headers amqp.Table
		want    string
	}{
		{nil, ""},
		{amqp.Table{"x-death": []any{amqp.Table{"queue": "jobs.retry", "reason": "expired", "count": int64(1)}}}, "jobs.retry"},
		{amqp.Table{"x-death": []any{amqp.Table{"queue": "jobs.retry", "reason": "rejected"}}}, ""},
		{amqp.Table{"x-death": []any{amqp.Table{"queue": "other", "reason": "expired"}, amqp.Table{"queue": "jobs.retry", "reason": "expired"}}}, ""},
		{amqp.Table{"x-death": "garbage"}, ""},
	}
	for _, tt := range tests {
		if got := cameBackFrom(tt.headers, isWait); got != tt.want {
			t.Errorf("cameBackFrom(%v) = %q, want %q", tt.headers, got, tt.want)
		}
	}
}
