package deadletter

import (
	"context"
	"fmt"
	"time"
)

// Target is where Replay publishes. The zero Target is each letter's
// source queue (its x-streamgen-source, or the queue the broker
// dead-lettered it from).
type Target struct {
	// Queue, when set, is a queue to publish every letter to (through the
	// default exchange).
	Queue string
	// Exchange, when set, is an exchange to publish every letter to with
	// RoutingKey.
	Exchange   string
	RoutingKey string
	// Address is, for a ZeroMQ keeper's Dir, where to push the letters
	// (tcp://host:port): the address the source queue is bound at. Each
	// letter is framed with its source queue, or Queue when set.
	Address string
}

// String says where t publishes.
func (t Target) String() string {
	switch {
	case t.Address != "" && t.Queue != "":
		return fmt.Sprintf("queue %s at %s", t.Queue, t.Address)
	case t.Address != "":
		return "each letter's source queue at " + t.Address
	case t.Exchange != "":
		return fmt.Sprintf("exchange %s with routing key %q", t.Exchange, t.RoutingKey)
	case t.Queue != "":
		return "queue " + t.Queue
	}
	return "each letter's source queue"
}

// Route returns the exchange and routing key (the queue, through the
// default exchange "") of l's replay, or ok false when l has no source to
// go back to.
func (t Target) Route(l *Letter) (exchange, key string, ok bool) {
	switch {
	case t.Exchange != "":
		return t.Exchange, t.RoutingKey, true
	case t.Queue != "":
		return "", t.Queue, true
	}
	return "", l.Source, l.Source != ""
}

// ReplayOptions tune Replay.
type ReplayOptions struct {
	// To is where the letters go; the zero Target is their source.
	To Target
	// Rate, when above 0, is the most letters published per second.
	Rate float64
	// DryRun reports what would be replayed and changes nothing.
	DryRun bool
	// Window is the most publishes awaiting their confirm (default 256).
	Window int
}

// Report says what an operation did.
type Report struct {
	// Scanned is the number of letters read, Selected of those picked.
	Scanned, Selected int
	// Done is the number replayed (confirmed by the broker) or purged;
	// with DryRun, the number that would be.
	Done int
	// Failed is the number picked and left in the queue, and Errors says
	// why (the first few).
	Failed int
	Errors []string
	// ReplayedKept names the letters a replay sent (counted in Done) and
	// could not remove from the store after all, by message id (by key,
	// "key K", when a letter has none): a later replay sends them again.
	// The replay's error says so too.
	ReplayedKept []string
}

// Pick counts l as read and reports whether sel picks it, within its
// limit; a picked letter is counted as selected.
func (r *Report) Pick(sel Selection, l *Letter) bool {
	r.Scanned++
	if !sel.Matches(l) || sel.Limit > 0 && r.Selected >= sel.Limit {
		return false
	}
	r.Selected++
	return true
}

// Fail counts a letter picked and left in the store, and keeps the first
// few reasons.
func (r *Report) Fail(format string, args ...any) {
	r.Failed++
	if len(r.Errors) < 10 {
		r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
	}
}

// Pace waits until the nth letter (from 1) of a replay that started at
// start may go, at most Rate a second; with no Rate it returns at once.
func (o ReplayOptions) Pace(ctx context.Context, start time.Time, n int) error {
	if o.Rate <= 0 {
		return nil
	}
	due := start.Add(time.Duration(float64(n-1) / o.Rate * float64(time.Second)))
	return Sleep(ctx, time.Until(due))
}

// Sleep waits d, or until ctx ends (then returning its error).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
