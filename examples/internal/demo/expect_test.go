package demo

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

func TestCheck(t *testing.T) {
	stats := []runtime.SubscriptionStats{
		{Subscription: "jobs", Delivered: 9, Acked: 2, Retried: 6, Dropped: 1},
		{Subscription: "idle"},
	}
	if err := Check(stats, map[string]runtime.SubscriptionStats{"jobs": {Delivered: 9, Acked: 2, Retried: 6, Dropped: 1}}); err != nil {
		t.Fatalf("matching counters: %v", err)
	}
	err := Check(stats, map[string]runtime.SubscriptionStats{"jobs": {Delivered: 9, Acked: 3, Retried: 6}, "invoices": {Delivered: 1}})
	if err == nil {
		t.Fatal("differing counters gave no error")
	}
	for _, want := range []string{
		"invoices: delivered 0, acked 0, retried 0, parked 0, rejected 0, dropped 0, failed 0, want delivered 1,",
		"jobs: delivered 9, acked 2, retried 6, parked 0, rejected 0, dropped 1, failed 0, want delivered 9, acked 3,",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := Check([]runtime.SubscriptionStats{{Subscription: "stray", Parked: 1}}, nil); err == nil || !strings.Contains(err.Error(), "stray: ") || !strings.Contains(err.Error(), "want nothing") {
		t.Errorf("a subscription nobody expected that counted something: %v", err)
	}
}

func TestWaitForReturnsOnceTheCountersAreReached(t *testing.T) {
	jobs := newCounts("jobs")
	m := jobs.snapshot
	go func() {
		for range 3 {
			jobs.add(func(s *runtime.SubscriptionStats) { s.Delivered++ })
			jobs.add(func(s *runtime.SubscriptionStats) { s.Acked++ })
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := WaitFor(ctx, m, map[string]runtime.SubscriptionStats{"jobs": {Delivered: 3, Acked: 3}}); err != nil {
		t.Fatal(err)
	}
}

func TestWaitForSaysWhatWasMissingWhenTimeRunsOut(t *testing.T) {
	jobs := newCounts("jobs")
	jobs.add(func(s *runtime.SubscriptionStats) { s.Delivered++ })
	m := jobs.snapshot
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := WaitFor(ctx, m, map[string]runtime.SubscriptionStats{"jobs": {Delivered: 2}})
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") || !strings.Contains(err.Error(), "jobs: delivered 1,") {
		t.Fatalf("WaitFor = %v, want the deadline and the difference", err)
	}
}

// counts stands in for an App's counters of one ZeroMQ subscription, for
// the tests to change.
type counts struct {
	mu    sync.Mutex
	stats runtime.SubscriptionStats
}

func newCounts(name string) *counts {
	return &counts{stats: runtime.SubscriptionStats{Broker: runtime.ZeroMQ, Subscription: name}}
}

// add changes the counters.
func (c *counts) add(change func(*runtime.SubscriptionStats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	change(&c.stats)
}

// snapshot returns the counters, as App.Stats does.
func (c *counts) snapshot() []runtime.SubscriptionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []runtime.SubscriptionStats{c.stats}
}
