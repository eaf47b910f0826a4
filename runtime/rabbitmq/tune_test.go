package rabbitmq

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// runtime.Tune changes a subscription's prefetch and concurrency from
// main: the broker holds the tuned prefetch unacknowledged (basic.qos),
// and the tuned number of handler calls run at once, whatever the
// annotations said.
func TestTunedPrefetchAndConcurrencyAreHonoured(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("tuned")
	const concurrency, prefetch, total = 3, 7, 20
	var g gauge
	gate := make(chan struct{})
	s := sub(q, 0, gatedHandler(&g, gate))
	s.Concurrency, s.Prefetch = 1, 2 // the annotations

	logs := streamtest.NewLogRecorder(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	ra := runtime.NewApp("streamgen-test", runtime.WithLogger(logs.Logger()),
		runtime.Tune(q, runtime.Prefetch(prefetch), runtime.Concurrency(concurrency)))
	ra.Mount(newTestBroker(), s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ra.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(patience):
			t.Error("Run did not return")
		}
	})
	select {
	case <-ra.Ready():
	case err := <-done:
		t.Fatalf("the App did not start: %v", err)
	}
	publishJobs(t, adm, q, total)

	testkit.Eventually(t, "the handler slots to fill", func() bool { r, _, _ := g.read(); return r == concurrency })
	testkit.Eventually(t, "the broker to hold the tuned prefetch unacked", func() bool { return adm.unacked(q) == prefetch })
	if n := adm.ready(q); n != total-prefetch {
		t.Errorf("%d messages ready, want %d (all but the prefetched)", n, total-prefetch)
	}
	if got := consumerPrefetch(t, q); got != "7" {
		t.Errorf("rabbitmqctl list_consumers shows prefetch_count %q for %s, want 7", got, q)
	}
	close(gate)
	testkit.Eventually(t, "every message to be handled", func() bool {
		for _, st := range ra.Stats() {
			if st.Subscription == q {
				return st.Acked == total
			}
		}
		return false
	})
	if _, most, done := g.read(); most != concurrency || done != total {
		t.Errorf("at most %d ran at once over %d calls; want %d over %d", most, done, concurrency, total)
	}
}

// consumerPrefetch returns the prefetch_count the broker shows for the
// consumer of queue, as rabbitmqctl list_consumers prints it.
func consumerPrefetch(t *testing.T, queue string) string {
	t.Helper()
	out := rabbitmqctl(t, "list_consumers", "-q", "--no-table-headers", "queue_name", "prefetch_count")
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == queue {
			return f[1]
		}
	}
	t.Fatalf("rabbitmqctl list_consumers shows no consumer of %s:\n%s", queue, out)
	return ""
}
