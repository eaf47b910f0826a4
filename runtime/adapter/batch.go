package adapter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/observe"
)

// batcher gathers the deliveries of a batch subscription into batches.
// Each delivery's Handle joins the batch filling; the first to join it
// leads it: it waits until the batch is full, its wait has passed on the
// App's clock or the Consumer drains, then calls the handler once for all
// of it (at most Concurrency such calls at once), gives each delivery its
// own Outcome, and decides and carries out each one's verdict, by its own
// policy and attempt count, as for a single message: a batch changes how
// the handler is called, and nothing after. The leader settles them all,
// one after the other, so that a batch's acks reach the Acknowledger from
// one goroutine, in order, and coalesce; then each Handle returns its own
// delivery's verdict.
type batcher struct {
	size  int
	wait  time.Duration
	clock clock.Clock
	// filling, when not nil, is told how the number of deliveries in the
	// batch filling changes (see FillWatcher).
	filling func(delta int)
	// calls holds a token per batch call running.
	calls chan struct{}

	mu   sync.Mutex
	open *batch // the batch filling, nil when none is
}

// batch is one handler call's deliveries.
type batch struct {
	items []batchItem
	// ready is closed when the batch stops filling: it is full, or its
	// wait passed, or its leader stopped it (seal).
	ready   chan struct{}
	timer   clock.Timer   // the batch's wait, set as it opens
	done    chan struct{} // closed once results is set
	results []batchResult
}

// batchResult is what became of one delivery of a batch.
type batchResult struct {
	v   Verdict
	err error
}

// batchItem is one decoded delivery waiting in a batch.
type batchItem struct {
	ctx context.Context // the delivery's own, with its observation
	d   *Delivery
	v   any
	md  runtime.Metadata
}

// FillWatcher is what a Transport may also be: told how many of the
// subscription's deliveries wait in a batch that is filling. Those wait
// for more messages, for the batch's wait to pass on the App's clock, or
// for the Consumer to drain; nothing else moves them. A harness on a fake
// clock counts them as idle, so that a test can move the clock past the
// wait. Filling is called with the Consumer's lock held: it must return at
// once and call nothing of the Consumer.
type FillWatcher interface {
	Filling(delta int)
}

func newBatcher(sub *runtime.Subscription, clk clock.Clock, tr Transport) *batcher {
	size, wait := sub.Batch()
	bt := &batcher{size: size, wait: wait, clock: clk, calls: make(chan struct{}, max(sub.Concurrency, 1))}
	if w, ok := tr.(FillWatcher); ok {
		bt.filling = w.Filling
	}
	return bt
}

// join adds an item to the batch filling, opening one when none is, and
// returns the batch, the item's index in it and whether the caller leads
// it. A batch's wait starts on the clock as it opens, before its first
// delivery counts as filling: a clock moved from then on releases it.
func (bt *batcher) join(it batchItem) (*batch, int, bool) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	b := bt.open
	lead := b == nil
	if lead {
		b = &batch{items: make([]batchItem, 0, bt.size), ready: make(chan struct{}), done: make(chan struct{})}
		bt.open = b
		if bt.size > 1 {
			b.timer = bt.clock.AfterFunc(bt.wait, func() { bt.seal(b) })
		}
	}
	b.items = append(b.items, it)
	if len(b.items) == bt.size {
		bt.sealLocked(b, len(b.items)-1)
	} else {
		bt.changed(+1)
	}
	return b, len(b.items) - 1, lead
}

// seal ends the filling of b, when it has not ended yet: no delivery
// joins it from now on, and its leader goes on.
func (bt *batcher) seal(b *batch) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	bt.sealLocked(b, len(b.items))
}

// sealLocked is seal, with bt.mu held; filling is how many of b's
// deliveries counted as filling.
func (bt *batcher) sealLocked(b *batch, filling int) {
	if bt.open != b {
		return
	}
	bt.open = nil
	if b.timer != nil {
		b.timer.Stop()
	}
	close(b.ready)
	bt.changed(-filling)
}

// changed tells the FillWatcher, if any, that delta more deliveries wait
// in the batch filling. bt.mu is held, so that it hears the changes in
// order.
func (bt *batcher) changed(delta int) {
	if bt.filling != nil && delta != 0 {
		bt.filling(delta)
	}
}

// batchCall is the rest of process for a delivery of a batch
// subscription: d, decoded into v, joins a batch, and batchCall returns
// once the batch's handler call is done and d was carried out, with d's
// verdict; d.batched holds it and the error d was settled with. base is
// the handlers' context, which the batch call runs in (each delivery's
// own context, with its observation, is linked to the batch's by a
// BatchObserver).
//
// A suspect (a delivery of the suspect queue) joins no batch: it runs
// alone, in a batch of its own, at once.
func (c *Consumer) batchCall(base, ctx context.Context, d *Delivery, i int, h *runtime.Handler, v any, md runtime.Metadata) Verdict {
	bt := c.batches
	it := batchItem{ctx: ctx, d: d, v: v, md: md}
	var b *batch
	if d.Suspect {
		b = &batch{items: []batchItem{it}, done: make(chan struct{})}
	} else {
		var n int
		var lead bool
		b, n, lead = bt.join(it)
		if !lead {
			<-b.done
			d.batched = &b.results[n]
			return b.results[n].v
		}
		c.fill(base, b)
	}
	var outs []runtime.Outcome
	if c.acquire(base) {
		outs = c.runBatch(base, i, h, b.items)
		<-bt.calls
	} else {
		// The shutdown deadline passed: the batch is not handled, and
		// each of its deliveries is left to the broker (or lost, where
		// nothing can take it back), as a single one would be.
		out := runtime.Retry().Because(fmt.Errorf("not handled before the shutdown deadline: %w", context.Cause(base)))
		outs = make([]runtime.Outcome, len(b.items))
		for k := range outs {
			outs[k] = out
		}
	}
	b.results = make([]batchResult, len(b.items))
	for k, it := range b.items {
		r := &b.results[k]
		r.v, r.err = c.finish(base, it.d, c.decide(it.d, h, outs[k]))
	}
	close(b.done)
	d.batched = &b.results[0]
	return b.results[0].v
}

// acquire takes a batch call's token, and reports false, with none taken,
// once ctx has ended.
func (c *Consumer) acquire(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case c.batches.calls <- struct{}{}:
		if ctx.Err() != nil {
			<-c.batches.calls
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// fill waits until b stops filling (it is full, or its wait passed on
// the App's clock), the Consumer drains (a shutdown handles the batch in
// hand at once) or ctx ends, and then seals it.
func (c *Consumer) fill(ctx context.Context, b *batch) {
	select {
	case <-b.ready:
	case <-c.draining:
	case <-ctx.Done():
	}
	c.batches.seal(b)
}

// runBatch calls handler i, h, once with the messages of items, through
// its middleware, and returns the Outcome of each.
func (c *Consumer) runBatch(ctx context.Context, i int, h *runtime.Handler, items []batchItem) []runtime.Outcome {
	vs := make([]any, len(items))
	mds := make([]runtime.Metadata, len(items))
	for k, it := range items {
		vs[k], mds[k] = it.v, it.md
	}
	md := runtime.Metadata{Subscription: c.sub.Name, MessageType: h.MessageType, MaxAttempts: h.Policy.Attempts(), Batch: mds}
	if bo, ok := c.obs.(observe.BatchObserver); ok {
		ctxs := make([]context.Context, len(items))
		for k, it := range items {
			ctxs[k] = it.ctx
		}
		bctx, end := bo.StartBatch(ctx, observe.BatchStart{Broker: string(c.rules.Kind), Subscription: c.sub.Name, MessageType: h.MessageType, Deliveries: ctxs})
		if bctx != nil {
			ctx = bctx
		}
		if end != nil {
			defer func() { end() }()
		}
	}
	start := time.Now()
	out := c.invoke(ctx, i, h, h.Gather(vs), md)
	took := time.Since(start)
	for _, it := range items {
		if it.d.obs != nil {
			it.d.obs.handled, it.d.obs.took = true, took
		}
	}
	return c.spread(out, len(items))
}

// spread turns the Outcome of a batch call of n messages into each
// message's: a BatchFailures fails the messages it names, each with its
// own error, and acknowledges the others; any other Outcome is every
// message's. A BatchFailures that names a message the batch does not
// have is the handler's mistake, and fails every message, since which
// ones failed cannot be told.
func (c *Consumer) spread(out runtime.Outcome, n int) []runtime.Outcome {
	outs := make([]runtime.Outcome, n)
	var bf *runtime.BatchFailures
	if out.Action() == runtime.ActionRetry && errors.As(out.Err(), &bf) {
		is := bf.Indexes()
		if bad := outside(is, n); bad != nil {
			out = runtime.Retry().Because(fmt.Errorf("the handler's BatchFailures names message %d, and its batch has messages 0 to %d, so which ones failed cannot be told: %w", *bad, n-1, bf))
		} else {
			for k := range outs {
				if err := bf.Failed(k); err != nil {
					outs[k] = runtime.OutcomeOf(err)
				} else {
					outs[k] = runtime.Ack()
				}
			}
			return outs
		}
	}
	for k := range outs {
		outs[k] = out
	}
	return outs
}

// outside returns the first of the sorted indexes is outside 0 to n-1, or
// nil.
func outside(is []int, n int) *int {
	switch {
	case len(is) == 0:
		return nil
	case is[0] < 0:
		return &is[0]
	case is[len(is)-1] >= n:
		return &is[len(is)-1]
	}
	return nil
}
