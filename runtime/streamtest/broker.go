package streamtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/wait"
)

// Broker is an in-process runtime.Broker and runtime.Publisher that
// emulates the retry and dead-letter semantics of RabbitMQ or ZeroMQ on a
// fake Clock. It keeps every queue in memory: a queue with a mounted
// subscription is consumed by that subscription's workers; any other queue
// (a dead-letter queue nobody reads, a RabbitMQ wait queue) keeps its
// messages for the test to look at with Queue.
//
// A Broker serves one App run, like every runtime.Broker. Publish works
// before Start (the message waits in its queue) and after Shutdown.
type Broker struct {
	kind  runtime.BrokerKind
	clock *Clock

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change of state
	state      brokerState
	codec      runtime.Codec
	queues     map[string][]queued
	seq        uint64 // the sequence number of the last message queued
	consumers  map[string]*runtime.Consumer
	waitQueues map[string][]runtime.WaitQueue // RabbitMQ: each subscription's, built at Start
	deliveries map[string][]Delivery
	rejected   map[string][]runtime.Message
	delayed    map[*delayedCopy]struct{} // ZeroMQ retry copies waiting in memory
	lost       int                       // ZeroMQ retry copies lost at shutdown
	busy       int                       // messages taken by a worker and not yet settled
	callbacks  int                       // clock callbacks running

	handlerCtx     context.Context
	cancelHandlers context.CancelFunc
	workers        sync.WaitGroup
}

type brokerState uint8

const (
	brokerNew brokerState = iota
	brokerRunning
	brokerStopping
	brokerStopped
)

// queued is a message in a queue. Its sequence number tells it from an
// equal copy. The broker never changes a queued message: it owns its
// headers and body, and hands out copies.
type queued struct {
	seq uint64
	msg runtime.Message
}

// delayedCopy is a ZeroMQ retry copy waiting out its delay in memory.
type delayedCopy struct {
	from  string
	timer runtime.Timer
}

// NewBroker returns a broker of the given kind (runtime.RabbitMQ or
// runtime.ZeroMQ) that waits out its delays on clock; a nil clock means a
// fresh NewClock(time.Time{}). A Clock serves one Broker.
func NewBroker(kind runtime.BrokerKind, clock *Clock) *Broker {
	if clock == nil {
		clock = NewClock(time.Time{})
	}
	b := &Broker{
		kind:       kind,
		clock:      clock,
		changed:    make(chan struct{}),
		codec:      runtime.JSON{},
		queues:     map[string][]queued{},
		consumers:  map[string]*runtime.Consumer{},
		waitQueues: map[string][]runtime.WaitQueue{},
		deliveries: map[string][]Delivery{},
		rejected:   map[string][]runtime.Message{},
		delayed:    map[*delayedCopy]struct{}{},
	}
	clock.setTrack(b.trackCallback)
	return b
}

var (
	_ runtime.Broker        = (*Broker)(nil)
	_ runtime.Publisher     = (*Broker)(nil)
	_ runtime.CodecProvider = (*Broker)(nil)
)

// Kind returns the kind of broker emulated.
func (b *Broker) Kind() runtime.BrokerKind { return b.kind }

// Clock returns the fake clock the broker waits on.
func (b *Broker) Clock() *Clock { return b.clock }

// Codec returns the codec the broker's App uses once started, JSON before.
// runtime.Publish encodes with it.
func (b *Broker) Codec() runtime.Codec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.codec
}

func (b *Broker) setCodec(c runtime.Codec) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.codec = c
}

// Start starts Subscription.Workers() workers for each consumer. It is
// called by runtime.App.Run. Like the real adapters, it refuses consumers
// that do not pass runtime.CheckConsumers.
func (b *Broker) Start(ctx context.Context, env runtime.Env, consumers []*runtime.Consumer) error {
	if b.kind != runtime.RabbitMQ && b.kind != runtime.ZeroMQ {
		return fmt.Errorf("streamtest: broker kind %q is not emulated: use runtime.RabbitMQ or runtime.ZeroMQ", b.kind)
	}
	if err := runtime.CheckConsumers(b.kind, consumers); err != nil {
		return fmt.Errorf("streamtest: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != brokerNew {
		return errors.New("streamtest: Start called twice: a Broker serves one App run")
	}
	for _, c := range consumers {
		b.consumers[c.Name()] = c
		if b.kind == runtime.RabbitMQ {
			b.waitQueues[c.Name()] = c.Subscription().WaitQueues()
		}
	}
	if env.Codec != nil {
		b.codec = env.Codec
	}
	// Handlers outlive the App's run context, which ends when the App starts
	// to stop: a graceful stop lets them finish. Shutdown cancels them when
	// its own deadline passes.
	b.handlerCtx, b.cancelHandlers = context.WithCancel(context.WithoutCancel(ctx))
	b.state = brokerRunning
	for _, c := range consumers {
		for range c.Subscription().Workers() {
			b.workers.Go(func() { b.work(c) })
		}
	}
	b.notifyLocked()
	return nil
}

// Shutdown stops taking messages from the queues and waits for the handler
// calls in progress to finish and settle. When ctx ends first, it cancels
// their contexts and returns an error. ZeroMQ retry copies still waiting
// for their delay are lost, as in a real process: Shutdown logs how many,
// and Lost counts them. RabbitMQ wait queues keep their copies, and their
// TTLs go on expiring into the subscription queues as the clock advances.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.state != brokerRunning {
		b.mu.Unlock()
		return nil
	}
	b.state = brokerStopping
	b.notifyLocked()
	b.mu.Unlock()

	var err error
	if werr := wait.Group(ctx, &b.workers); werr != nil {
		b.mu.Lock()
		busy := b.busy
		b.mu.Unlock()
		b.cancelHandlers()
		err = fmt.Errorf("streamtest: shutdown: %d handler calls still running, their contexts are now cancelled: %w", busy, werr)
	}
	b.cancelHandlers()

	b.mu.Lock()
	defer b.mu.Unlock()
	b.state = brokerStopped
	lost := map[string]int{}
	for dc := range b.delayed {
		if dc.timer.Stop() {
			lost[dc.from]++
			b.lost++
		}
		delete(b.delayed, dc)
	}
	for name, n := range lost {
		if c := b.consumers[name]; c != nil {
			c.Logger().Warn("retry copies still waiting in memory are lost at shutdown", "count", n)
		}
	}
	b.notifyLocked()
	return err
}

// Publish puts msg at the tail of queue: a RabbitMQ queue, or a ZeroMQ
// subscription name. A mounted subscription of that name consumes it.
func (b *Broker) Publish(ctx context.Context, queue string, msg runtime.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("streamtest: publish to %q: %w", queue, err)
	}
	if queue == "" {
		return errors.New("streamtest: publish: the queue name is empty")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueueLocked(queue, cloneMessage(msg))
	return nil
}

// Queue returns a copy of the messages waiting in the named queue. For a
// queue nobody consumes (a dead-letter queue, a RabbitMQ wait queue) these
// are all the messages it received; a consumed queue is empty once the
// broker is idle.
func (b *Broker) Queue(name string) []runtime.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]runtime.Message, len(b.queues[name]))
	for i, q := range b.queues[name] {
		out[i] = cloneMessage(q.msg)
	}
	return out
}

// Deliveries returns a copy of what the named subscription received, in
// the order the deliveries were settled.
func (b *Broker) Deliveries(subscription string) []Delivery {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := slices.Clone(b.deliveries[subscription])
	for i := range out {
		out[i].Headers = maps.Clone(out[i].Headers)
		out[i].Body = bytes.Clone(out[i].Body)
	}
	return out
}

// Rejected returns a copy of the messages the named RabbitMQ subscription
// rejected without requeue (poison with no dead-letter queue, or
// DeadLetterNow with none): a broker-level dead-letter exchange would
// receive these.
func (b *Broker) Rejected(subscription string) []runtime.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]runtime.Message, len(b.rejected[subscription]))
	for i, m := range b.rejected[subscription] {
		out[i] = cloneMessage(m)
	}
	return out
}

// Lost returns how many ZeroMQ retry copies were still waiting for their
// delay when the broker shut down.
func (b *Broker) Lost() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lost
}

// Wait blocks until the broker is idle: no message waits in a consumed
// queue, no handler call is in progress, no clock callback is running.
// Timers not yet due stay pending. It returns an error saying what is still
// busy when ctx ends first.
func (b *Broker) Wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		if b.idleLocked() {
			b.mu.Unlock()
			return nil
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("streamtest: not idle: %s: %w", b.describeBusy(), ctx.Err())
		}
	}
}

// Advance waits until idle, then moves the clock d forward: each timer due
// by then fires in due order, and the broker becomes idle after each before
// the next fires. It returns with the broker idle, or an error when ctx
// ends first.
func (b *Broker) Advance(ctx context.Context, d time.Duration) error {
	if err := b.Wait(ctx); err != nil {
		return err
	}
	var errs []error
	b.clock.advance(d, func() {
		if err := b.Wait(ctx); err != nil && len(errs) == 0 {
			errs = append(errs, err)
		}
	})
	if len(errs) > 0 {
		return errs[0]
	}
	return b.Wait(ctx)
}

func (b *Broker) idleLocked() bool {
	if b.busy > 0 || b.callbacks > 0 {
		return false
	}
	if b.state == brokerRunning {
		for name := range b.consumers {
			if len(b.queues[name]) > 0 {
				return false
			}
		}
	}
	return true
}

func (b *Broker) describeBusy() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	parts := []string{fmt.Sprintf("%d handler calls in progress", b.busy)}
	if b.callbacks > 0 {
		parts = append(parts, fmt.Sprintf("%d clock callbacks running", b.callbacks))
	}
	names := slices.Sorted(maps.Keys(b.consumers))
	for _, name := range names {
		if n := len(b.queues[name]); n > 0 && b.state == brokerRunning {
			parts = append(parts, fmt.Sprintf("%d messages queued for %s", n, name))
		}
	}
	return strings.Join(parts, ", ")
}

func (b *Broker) trackCallback(delta int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.callbacks += delta
	b.notifyLocked()
}

func (b *Broker) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// enqueueLocked puts m, which the broker owns from now on, at the tail of
// queue, and returns its sequence number.
func (b *Broker) enqueueLocked(queue string, m runtime.Message) uint64 {
	b.seq++
	b.queues[queue] = append(b.queues[queue], queued{seq: b.seq, msg: m})
	b.notifyLocked()
	return b.seq
}

// work is one worker of consumer c: it takes the next message of c's queue
// and settles it, until the broker stops.
func (b *Broker) work(c *runtime.Consumer) {
	for {
		m, ok := b.take(c.Name())
		if !ok {
			return
		}
		b.deliver(c, m)
		b.mu.Lock()
		b.busy--
		b.notifyLocked()
		b.mu.Unlock()
	}
}

// take removes the head of queue and counts it as busy; it waits for one,
// and reports false once the broker stops.
func (b *Broker) take(queue string) (runtime.Message, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.state != brokerRunning {
			return runtime.Message{}, false
		}
		if q := b.queues[queue]; len(q) > 0 {
			b.queues[queue] = q[1:]
			b.busy++
			return q[0].msg, true
		}
		ch := b.changed
		b.mu.Unlock()
		<-ch
		b.mu.Lock()
	}
}

// deliver runs one message through c the way a broker adapter does: compute
// the attempt, Process, carry out the verdict, Settle. The handler gets a
// copy of m, which it may change; m itself, as it arrived, is what the
// delivery record and the copies sent on are made of.
func (b *Broker) deliver(c *runtime.Consumer, m runtime.Message) {
	count, err := runtime.ParseRetryCount(m.Headers[runtime.RetryCountHeader])
	raw := cloneMessage(m)
	d := &runtime.Delivery{
		MessageID:   m.ID,
		Type:        m.Type,
		ContentType: m.ContentType,
		Headers:     raw.Headers,
		Body:        raw.Body,
		Attempt:     count + 1,
		Raw:         raw,
	}
	if d.Headers == nil {
		d.Headers = map[string]string{}
	}
	if err != nil {
		if b.kind == runtime.ZeroMQ {
			// Malformed, as the adapter finds it: it never reaches Process.
			d.Attempt = 0
			v := c.Discard(d, fmt.Sprintf("malformed message: header %s: %v", runtime.RetryCountHeader, err), nil)
			b.record(c, m, d.Attempt, v, nil)
			return
		}
		c.WarnOnce("retry-count", "retry count header is not a number; counting this as the first delivery",
			"message_id", m.ID, "reason", err.Error())
		d.Attempt = 1
	}
	v := c.Process(b.handlerCtx, d)
	err = b.carryOut(c, m, &v)
	c.Settle(d, v, err)
	b.record(c, m, d.Attempt, v, err)
}

// record adds what became of m to the deliveries of c's subscription.
func (b *Broker) record(c *runtime.Consumer, m runtime.Message, attempt int, v runtime.Verdict, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deliveries[c.Name()] = append(b.deliveries[c.Name()], Delivery{
		Subscription: c.Name(),
		Attempt:      attempt,
		MessageType:  m.Type,
		MessageID:    m.ID,
		ContentType:  m.ContentType,
		Headers:      m.Headers,
		Body:         m.Body,
		Verdict:      v,
		Err:          err,
		Time:         b.clock.Now(),
	})
}

// carryOut executes v for message m (as it arrived) the way the emulated
// broker's adapter does. It may set v.Delay and v.Queue to what it applied.
// Start refused the subscriptions whose verdicts could not be carried out
// (CheckConsumers): a retry always has a wait queue or a destination.
func (b *Broker) carryOut(c *runtime.Consumer, m runtime.Message, v *runtime.Verdict) error {
	sub := c.Subscription()
	switch v.Kind {
	case runtime.VerdictAck, runtime.VerdictDrop:
		return nil
	case runtime.VerdictPark:
		b.mu.Lock()
		defer b.mu.Unlock()
		b.enqueueLocked(v.Queue, parkedCopy(m, sub.Name, *v, b.clock.Now()))
		return nil
	case runtime.VerdictReject:
		if b.kind == runtime.ZeroMQ {
			return nil // the adapter drops it: nothing can take it back
		}
		if sub.AckMode() == runtime.AckAuto {
			return errors.New("streamtest: ack=auto acknowledged the message on delivery, so it cannot be rejected: it is lost (add a dead_letter to keep such messages)")
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.rejected[sub.Name] = append(b.rejected[sub.Name], m)
		return nil
	case runtime.VerdictRetry:
		if b.kind == runtime.RabbitMQ {
			return b.retryRabbitMQ(sub, m, v)
		}
		return b.retryZeroMQ(sub, m, v)
	}
	return fmt.Errorf("streamtest: unknown verdict %v; the message is dropped", v.Kind)
}

// retryRabbitMQ puts the copy in the wait queue the subscription's ladder
// picks; when its TTL passes, the copy returns to the subscription's queue.
func (b *Broker) retryRabbitMQ(sub *runtime.Subscription, m runtime.Message, v *runtime.Verdict) error {
	wq := runtime.PickWaitQueue(b.waitQueues[sub.Name], v.Attempt, v.Delay) // written by Start only
	v.Delay, v.Queue = wq.TTL, wq.Name
	cp := retryCopy(m, v.Attempt)
	b.mu.Lock()
	defer b.mu.Unlock()
	seq := b.enqueueLocked(wq.Name, cp)
	b.clock.AfterFunc(wq.TTL, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		// The copy is still there, unless a subscription consumes the
		// wait queue.
		q := b.queues[wq.Name]
		for i := range q {
			if q[i].seq == seq {
				b.queues[wq.Name] = slices.Delete(q, i, i+1)
				b.enqueueLocked(sub.Name, cp)
				return
			}
		}
	})
	return nil
}

// retryZeroMQ holds the copy in memory for v.Delay, then sends it to the
// out_retry destination.
func (b *Broker) retryZeroMQ(sub *runtime.Subscription, m runtime.Message, v *runtime.Verdict) error {
	dest := v.Queue // out_retry, with self resolved by the Consumer
	cp := retryCopy(m, v.Attempt)
	b.mu.Lock()
	defer b.mu.Unlock()
	if v.Delay <= 0 {
		b.enqueueLocked(dest, cp)
		return nil
	}
	dc := &delayedCopy{from: sub.Name}
	dc.timer = b.clock.AfterFunc(v.Delay, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, waiting := b.delayed[dc]; !waiting {
			return
		}
		delete(b.delayed, dc)
		b.enqueueLocked(dest, cp)
	})
	b.delayed[dc] = struct{}{}
	return nil
}

// retryCopy is m with its retry count header set to count: the attempt
// that failed. It shares m's body, which nobody changes.
func retryCopy(m runtime.Message, count int) runtime.Message {
	m.Headers = maps.Clone(m.Headers)
	if m.Headers == nil {
		m.Headers = map[string]string{}
	}
	m.Headers[runtime.RetryCountHeader] = strconv.Itoa(count)
	return m
}

// parkedCopy is m as a dead letter: the explanation headers added, and the
// retry count removed, since the dead-letter queue's own consumers start
// counting afresh (the attempts are in the explanation headers). It shares
// m's body, which nobody changes.
func parkedCopy(m runtime.Message, subscription string, v runtime.Verdict, now time.Time) runtime.Message {
	explain := runtime.DeadLetterHeaders(subscription, v, now)
	headers := make(map[string]string, len(m.Headers)+len(explain))
	maps.Copy(headers, m.Headers)
	delete(headers, runtime.RetryCountHeader)
	maps.Copy(headers, explain)
	m.Headers = headers
	return m
}

func cloneMessage(m runtime.Message) runtime.Message {
	m.Headers = maps.Clone(m.Headers)
	m.Body = bytes.Clone(m.Body)
	return m
}
