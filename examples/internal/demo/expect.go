package demo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// counters returns the counters of s alone: s without its broker and
// subscription name.
func counters(s runtime.SubscriptionStats) runtime.SubscriptionStats {
	s.Broker, s.Subscription = "", ""
	return s
}

// countersText writes the counters of s.
func countersText(s runtime.SubscriptionStats) string {
	return fmt.Sprintf("delivered %d, acked %d, retried %d, parked %d, rejected %d, dropped %d, failed %d",
		s.Delivered, s.Acked, s.Retried, s.Parked, s.Rejected, s.Dropped, s.Failed)
}

// Check compares the counters in stats with want, by subscription name:
// want holds for each subscription the counters expected of it, a counter
// not set expected to be zero (the Broker and Subscription fields are not
// compared). It returns nil when every subscription in want has exactly
// its counters and no other subscription counted anything, else an error
// listing each difference.
func Check(stats []runtime.SubscriptionStats, want map[string]runtime.SubscriptionStats) error {
	got := map[string]runtime.SubscriptionStats{}
	for _, s := range stats {
		got[s.Subscription] = counters(s)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if g, w := got[name], counters(want[name]); g != w {
			errs = append(errs, fmt.Errorf("%s: %s, want %s", name, countersText(g), countersText(w)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok && got[name] != (runtime.SubscriptionStats{}) {
			errs = append(errs, fmt.Errorf("%s: %s, want nothing", name, countersText(got[name])))
		}
	}
	return errors.Join(errs...)
}

// pollInterval is how often WaitFor reads the counters.
const pollInterval = 10 * time.Millisecond

// WaitFor waits until the counters of m are exactly want (see Check). When
// ctx ends first it returns an error with the last difference seen.
func WaitFor(ctx context.Context, stats func() []runtime.SubscriptionStats, want map[string]runtime.SubscriptionStats) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := Check(stats(), want)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: the counters did not reach what was expected (%w):\n%w", context.Cause(ctx), err)
		case <-tick.C:
		}
	}
}
