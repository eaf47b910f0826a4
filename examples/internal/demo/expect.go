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

// Counts are the counters a demo expects of one subscription. A counter
// not set is expected to be zero.
type Counts struct {
	Delivered, Acked, Retried, Parked, Rejected, Dropped, Failed int64
}

// countsOf returns the counters of s.
func countsOf(s runtime.SubscriptionStats) Counts {
	return Counts{
		Delivered: s.Delivered, Acked: s.Acked, Retried: s.Retried, Parked: s.Parked,
		Rejected: s.Rejected, Dropped: s.Dropped, Failed: s.Failed,
	}
}

func (c Counts) String() string {
	return fmt.Sprintf("delivered %d, acked %d, retried %d, parked %d, rejected %d, dropped %d, failed %d",
		c.Delivered, c.Acked, c.Retried, c.Parked, c.Rejected, c.Dropped, c.Failed)
}

// Check compares the counters in stats with want, by subscription name. It
// returns nil when every subscription in want has exactly its counts and
// no other subscription counted anything, else an error listing each
// difference.
func Check(stats []runtime.SubscriptionStats, want map[string]Counts) error {
	got := map[string]Counts{}
	for _, s := range stats {
		got[s.Subscription] = countsOf(s)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if g := got[name]; g != want[name] {
			errs = append(errs, fmt.Errorf("%s: %v, want %v", name, g, want[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok && got[name] != (Counts{}) {
			errs = append(errs, fmt.Errorf("%s: %v, want nothing", name, got[name]))
		}
	}
	return errors.Join(errs...)
}

// pollInterval is how often WaitFor reads the counters.
const pollInterval = 10 * time.Millisecond

// WaitFor waits until the counters of m are exactly want (see Check). When
// ctx ends first it returns an error with the last difference seen.
func WaitFor(ctx context.Context, m *runtime.Metrics, want map[string]Counts) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := Check(m.Snapshot(), want)
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
