package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// Step is one part of a demo: what it sends, and the counters expected
// once it is over (cumulative, per subscription).
type Step struct {
	Title string
	Send  func(ctx context.Context, p runtime.Publisher) error
	Want  map[string]runtime.SubscriptionStats
}

// Play plays the steps in order. For each, it writes through n the step's
// number and title with the ColumnTitles under them, sends the step's
// messages through p, and waits up to timeout until m shows the step's
// counters and n has told every delivery they count, so that the next
// step's title comes after the last line of this one. Its error says
// "interrupted" when ctx ends first; otherwise it names the step whose
// messages could not be sent or whose counters were not reached.
func Play(ctx context.Context, n *Narrator, p runtime.Publisher, stats func() []runtime.SubscriptionStats, steps []Step, timeout time.Duration) error {
	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted: %w", err)
		}
		n.Printf("\n%d. %s\n\n%s\n", i+1, st.Title, ColumnTitles())
		if err := st.Send(ctx, p); err != nil {
			return fmt.Errorf("step %d: send: %w", i+1, err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, timeout)
		err := WaitFor(waitCtx, stats, st.Want)
		if err == nil {
			err = n.CaughtUp(waitCtx, stats)
		}
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return nil
}
