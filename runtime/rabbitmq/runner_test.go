package rabbitmq

import (
	"log/slog"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// A reconnect adds no handler slots: while the handlers of the lost session
// still run, the deliveries of the new session wait for them, and every
// message is handled in the end.
func TestReconnectKeepsTheConcurrency(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("slots")
	const concurrency, prefetch, total = 2, 5, 12
	name := "streamgen-test-slots-" + randomHex(4)
	b := New(brokerURL(), WithConnectionName(name), WithReconnectBackoff(50*time.Millisecond, time.Second, 0.2))
	var g gauge
	gate := make(chan struct{})
	s := sub(q, 0, gatedHandler(&g, gate))
	s.Concurrency, s.Prefetch = concurrency, prefetch
	a := runApp(t, b, s)
	publishJobs(t, adm, q, total)

	testkit.Eventually(t, "the handler slots to fill", func() bool { r, _, _ := g.read(); return r == concurrency })
	if n := testkit.CloseConnections(t, name); n < 1 {
		t.Fatalf("closed %d connections named %s", n, name)
	}
	testkit.Eventually(t, "the worker to reconnect", func() bool {
		return len(a.logs.Find(slog.LevelInfo, "rabbitmq: reconnected; consuming again")) >= 1
	})
	// The new session's consumer holds deliveries while the old handlers
	// still run.
	testkit.Eventually(t, "the new consumer to receive its prefetch", func() bool { return adm.unacked(q) == prefetch })
	// Give a runner that would start them a moment to do so; the check
	// below fails if it did.
	time.Sleep(200 * time.Millisecond)
	if r, most, _ := g.read(); r != concurrency || most != concurrency {
		t.Errorf("across the reconnect %d handlers run, at most %d; want %d", r, most, concurrency)
	}

	close(gate)
	seen := map[int]bool{}
	testkit.Eventually(t, "every message to be handled", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, id := range g.handledIDs {
			seen[id] = true
		}
		return len(seen) == total
	})
	if _, most, _ := g.read(); most != concurrency {
		t.Errorf("at most %d handlers ran at once, want %d", most, concurrency)
	}
}
