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

// TargetKind is a kind of Target: which of its fields a replay uses.
// Each store replays to some kinds only (TargetKinds).
type TargetKind int

// The kinds of Target.
const (
	// ToSource is each letter's source queue: the zero Target.
	ToSource TargetKind = iota + 1
	// ToQueue is one queue, Target.Queue.
	ToQueue
	// ToExchange is an exchange, Target.Exchange, with its RoutingKey.
	ToExchange
	// ToSourceAt is each letter's source queue at Target.Address, where
	// a transport without a broker (ZeroMQ) has it bound.
	ToSourceAt
	// ToQueueAt is one queue, Target.Queue, at Target.Address.
	ToQueueAt
)

// String says what k is, in words a page or a message can use.
func (k TargetKind) String() string {
	switch k {
	case ToSource:
		return "each letter's source queue"
	case ToQueue:
		return "a queue"
	case ToExchange:
		return "an exchange"
	case ToSourceAt:
		return "each letter's source queue at an address"
	case ToQueueAt:
		return "a queue at an address"
	}
	return fmt.Sprintf("TargetKind(%d)", int(k))
}

// Kind is the kind of t, or 0 for a Target that mixes kinds (an
// exchange with a queue or an address, a routing key without an
// exchange).
func (t Target) Kind() TargetKind {
	switch {
	case t.Exchange != "":
		if t.Queue != "" || t.Address != "" {
			return 0
		}
		return ToExchange
	case t.RoutingKey != "":
		return 0
	case t.Address != "" && t.Queue != "":
		return ToQueueAt
	case t.Address != "":
		return ToSourceAt
	case t.Queue != "":
		return ToQueue
	}
	return ToSource
}

// TargetKinder is a Store that says which kinds of Target its Replay
// takes, for a program (the console) to ask only for those. A
// zeromq.DeadLetterDir takes ToSourceAt and ToQueueAt.
type TargetKinder interface {
	TargetKinds() []TargetKind
}

// TargetKinds returns the kinds of Target s replays to: its TargetKinds
// when it is a TargetKinder, else ToSource, ToQueue and ToExchange, those
// of a broker with queues and exchanges (a RabbitMQ dead-letter queue).
func TargetKinds(s Store) []TargetKind {
	if k, ok := s.(TargetKinder); ok {
		return k.TargetKinds()
	}
	return []TargetKind{ToSource, ToQueue, ToExchange}
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

// Plan is the first step of a replay of letter l, the same in every
// store: it counts l as read (Pick) and reports whether the replay sends
// l now, and its route (Target.Route). A letter sel does not pick is not
// sent; one with no route to go back to is counted failed; in a dry run
// a picked letter is counted done and not sent.
func (r *Report) Plan(sel Selection, opts ReplayOptions, l *Letter) (exchange, key string, send bool) {
	if !r.Pick(sel, l) {
		return "", "", false
	}
	exchange, key, ok := opts.To.Route(l)
	if !ok {
		r.Fail("letter %s: no source queue to replay to: give a target queue", l.MessageID())
		return "", "", false
	}
	if opts.DryRun {
		r.Done++
		return "", "", false
	}
	return exchange, key, true
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
