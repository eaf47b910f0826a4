package rabbitmq

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// retry_delay=100ms,300ms declares one wait queue per step; attempt n
// waits in step min(n, steps), and RetryAfter(d) picks the smallest step
// at least d long.
func TestBackoffLadder(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("ladder", ".retry.100ms", ".retry.300ms", ".dl")
	var c calls
	s := &runtime.Subscription{
		Name: q, Broker: runtime.RabbitMQ,
		RetryDelays: []time.Duration{100 * time.Millisecond, 300 * time.Millisecond},
		Handlers: []runtime.Handler{handler("Job", runtime.Policy{MaxAttempts: 4, DeadLetter: q + ".dl"}, &c, func(j *job, md runtime.Metadata) runtime.Outcome {
			if j.ID == 2 && md.Attempt == 1 {
				return runtime.Retry().After(250 * time.Millisecond).Because(errFailed)
			}
			return runtime.Retry().Because(errFailed)
		})},
	}
	a := runApp(t, newTestBroker(), s)
	if adm.exists(q + ".retry") {
		t.Errorf("a ladder declared the single wait queue %s.retry", q)
	}
	publishJob(t, a.broker, q, "Job", job{ID: 1}, runtime.WithMessageID("l-1"))
	testkit.Eventually(t, "job 1 to be parked", func() bool { return adm.ready(q+".dl") == 1 })
	testkit.Eventually(t, "job 1's retries to be logged", func() bool { return len(a.logs.Find(slog.LevelInfo, "message will be retried")) == 3 })
	publishJob(t, a.broker, q, "Job", job{ID: 2}, runtime.WithMessageID("l-2"))
	testkit.Eventually(t, "job 2 to be parked", func() bool { return adm.ready(q+".dl") == 2 })
	testkit.Eventually(t, "job 2's retries to be logged", func() bool { return len(a.logs.Find(slog.LevelInfo, "message will be retried")) == 6 })

	via := map[string][]string{}
	for _, r := range a.logs.Find(slog.LevelInfo, "message will be retried") {
		via[r.Attr("message_id")] = append(via[r.Attr("message_id")], r.Attr("via"))
	}
	short, long := q+".retry.100ms", q+".retry.300ms"
	if want := []string{short, long, long}; !slices.Equal(via["l-1"], want) {
		t.Errorf("job 1 waited in %v, want %v", via["l-1"], want)
	}
	if want := []string{long, long, long}; !slices.Equal(via["l-2"], want) {
		t.Errorf("job 2 (RetryAfter 250ms first) waited in %v, want %v", via["l-2"], want)
	}
	var attempts []int
	for _, md := range c.metadata() {
		if md.MessageID == "l-1" {
			attempts = append(attempts, md.Attempt)
		}
	}
	if !slices.Equal(attempts, []int{1, 2, 3, 4}) {
		t.Errorf("job 1 attempts %v, want [1 2 3 4] across the ladder's queues", attempts)
	}
}
