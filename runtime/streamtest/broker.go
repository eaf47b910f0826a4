package streamtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
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
	consumers  map[string]*adapter.Consumer
	waitQueues map[string]waitQueue // RabbitMQ: every subscription's, by name, built at Start
	deliveries map[string][]Delivery
	rejected   map[string][]runtime.Message
	lost       int                     // ZeroMQ retry copies lost at shutdown
	exchanges  map[string]*memExchange // RabbitMQ: by name, see Bind
	replies    replyBox                // the requests waiting for their reply (Request)

	retryCountHeader string
	version          adapter.RabbitMQVersion // RabbitMQ: the version whose queues are emulated
	busy             int                     // messages taken by a worker and not yet settled
	filling          int                     // of those, the ones waiting in a batch that is filling
	callbacks        int                     // clock callbacks running

	handlerCtx     context.Context
	cancelHandlers context.CancelFunc
	workers        sync.WaitGroup

	// feeders move into the broker what waits elsewhere to be published
	// (a Harness's outboxes, WithOutbox): Wait calls them once the broker
	// is idle, and waits again while one reports that something moved.
	feeders []func(ctx context.Context) (moved bool, err error)
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
// headers and body, and hands out copies. A message handed back
// (RabbitMQ) is redelivered, and returned counts the returns a quorum
// queue would count (x-delivery-count).
type queued struct {
	seq         uint64
	msg         runtime.Message
	redelivered bool
	returned    int
	// retried counts the times a queue that retries by itself took the
	// message back for a retry (x-acquired-count less x-delivery-count).
	retried int
}

// waitQueue is a RabbitMQ wait queue: a copy in it returns to target
// after ttl.
type waitQueue struct {
	ttl    time.Duration
	target string
}

// NewBroker returns a broker of the given kind (runtime.RabbitMQ or
// runtime.ZeroMQ) that waits out its delays on clock; a nil clock means a
// fresh NewClock(time.Time{}). A Clock serves one Broker.
func NewBroker(kind runtime.BrokerKind, clock *Clock, opts ...BrokerOption) *Broker {
	if clock == nil {
		clock = NewClock(time.Time{})
	}
	b := &Broker{
		kind:       kind,
		clock:      clock,
		changed:    make(chan struct{}),
		codec:      runtime.JSON{},
		queues:     map[string][]queued{},
		consumers:  map[string]*adapter.Consumer{},
		waitQueues: map[string]waitQueue{},
		deliveries: map[string][]Delivery{},
		rejected:   map[string][]runtime.Message{},
	}
	for _, o := range opts {
		o(b)
	}
	clock.setTrack(b.trackCallback)
	return b
}

// BrokerOption configures a Broker.
type BrokerOption func(*Broker)

// RabbitMQVersion makes a RabbitMQ broker emulate the queues of RabbitMQ
// major.minor; the default is 3.x. From 4.3 on, the quorum queue of a
// subscription that can (adapter.BrokerRetry) waits out its retries
// itself: a retried message is handed back and returns to the end of its
// queue once its delay passed on the clock, with no copy and no wait
// queue, as the real adapter runs it on RabbitMQ 4.3.
func RabbitMQVersion(major, minor int) BrokerOption {
	return func(b *Broker) { b.version = adapter.RabbitMQVersion{Major: major, Minor: minor} }
}

// RetryCountHeader makes the broker carry the retry count in the named
// header, as zeromq.WithRetryCountHeader does for a real ZeroMQ broker.
func RetryCountHeader(name string) BrokerOption {
	return func(b *Broker) { b.retryCountHeader = name }
}

var (
	_ adapter.FillWatcher                = (*memTransport)(nil)
	_ runtime.Broker                     = (*Broker)(nil)
	_ runtime.Publisher                  = (*Broker)(nil)
	_ interface{ Codec() runtime.Codec } = (*Broker)(nil)
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

// Start makes a Consumer for each subscription and starts
// Subscription.Workers() workers for each. It is called by runtime.App.Run,
// with the subscriptions Run checked, as the real adapters are.
func (b *Broker) Start(ctx context.Context, env runtime.Env, subs []*runtime.Subscription) error {
	if b.kind != runtime.RabbitMQ && b.kind != runtime.ZeroMQ {
		return fmt.Errorf("streamtest: broker kind %q is not emulated: use runtime.RabbitMQ or runtime.ZeroMQ", b.kind)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != brokerNew {
		return errors.New("streamtest: Start called twice: a Broker serves one App run")
	}
	rules := adapter.Rules{Kind: b.kind, RetryCountHeader: b.retryCountHeader}
	consumers := make([]*adapter.Consumer, len(subs))
	for i, sub := range subs {
		tr := &memTransport{b: b, sub: sub}
		c := adapter.NewConsumer(sub, env, rules, tr)
		if b.kind == runtime.RabbitMQ {
			tr.retryDelay, _ = c.ChooseRetry(b.version, false)
		}
		consumers[i] = c
		b.consumers[sub.Name] = c
		for _, q := range adapter.WaitQueues(sub) {
			b.waitQueues[q.Name] = waitQueue{ttl: q.TTL, target: sub.Name}
		}
		if sub.Exchange != "" && b.kind == runtime.RabbitMQ {
			if err := b.bindLocked(sub.Exchange, sub.ExchangeKind(), sub.Name, sub.Bindings); err != nil {
				return fmt.Errorf("%w (subscription %s)", err, sub.Name)
			}
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
			b.workers.Go(func() { b.work(c, c.Name(), false) })
		}
		if q := c.SuspectQueue(); q != "" {
			// A RabbitMQ adapter takes the suspect queue's messages one at
			// a time, beside the subscription's.
			b.workers.Go(func() { b.work(c, q, true) })
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
	for _, c := range b.consumerList() {
		c.Drain() // a batch in hand is handled now, not after its wait
	}

	var err error
	if werr := wait.Group(ctx, &b.workers); werr != nil {
		b.mu.Lock()
		busy := b.busy
		b.mu.Unlock()
		b.cancelHandlers()
		err = fmt.Errorf("streamtest: shutdown: %d handler calls still running, their contexts are now cancelled: %w", busy, werr)
	}
	b.cancelHandlers()

	lost := 0
	for _, c := range b.consumerList() {
		lost += c.Stop()
		if werr := c.WaitCopies(ctx); werr != nil && err == nil {
			err = fmt.Errorf("streamtest: shutdown: retry copies were still being sent: %w", werr)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state = brokerStopped
	b.lost += lost
	b.notifyLocked()
	return err
}

// Publish puts msg at the tail of queue: a RabbitMQ queue, or a ZeroMQ
// subscription name. A mounted subscription of that name consumes it.
func (b *Broker) Publish(ctx context.Context, queue string, msg runtime.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("streamtest: publish to %q: %w", queue, err)
	}
	if msg.RoutingKey != "" {
		queue = msg.RoutingKey
	}
	// The harness of a kind refuses what a broker of that kind refuses.
	if err := adapter.CheckMessage(b.kind, msg); err != nil {
		return fmt.Errorf("streamtest: publish to %q: %w", queue, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if msg.Exchange != "" {
		return b.publishToExchangeLocked(queue, msg)
	}
	if queue == "" {
		return errors.New("streamtest: publish: the queue name is empty")
	}
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

// Redeliver puts msgs back at the head of the named queue, in order, as
// RabbitMQ hands back the messages a worker held when it died (crashed,
// or lost its connection): marked redelivered, each counted returned
// times (at least once) as a quorum queue counts returns
// (x-delivery-count). A test sees with it what a subscription does with
// the messages a crash brought back: each runs alone, none beside
// another handler; on a classic queue it is first set aside on the
// subscription's suspect queue, and a suspect that comes back (Redeliver
// to the suspect queue) counts one more crash; at the subscription's
// crash limit the message is parked without running (see
// runtime/adapter). RabbitMQ only: ZeroMQ never hands a message back.
func (b *Broker) Redeliver(queue string, returned int, msgs ...runtime.Message) error {
	if b.kind != runtime.RabbitMQ {
		return fmt.Errorf("streamtest: redeliver to %q: a %s broker never hands a message back; Redeliver is for RabbitMQ", queue, b.kind)
	}
	if queue == "" {
		return errors.New("streamtest: redeliver: the queue name is empty")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	head := make([]queued, 0, len(msgs)+len(b.queues[queue]))
	for _, m := range msgs {
		b.seq++
		head = append(head, queued{seq: b.seq, msg: cloneMessage(m), redelivered: true, returned: max(returned, 1)})
	}
	b.queues[queue] = append(head, b.queues[queue]...)
	b.notifyLocked()
	return nil
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
// Messages waiting in a batch that is not full count as idle: only more
// messages, or the clock moved past the batch's wait, move them on.
// Timers not yet due stay pending. It returns an error saying what is still
// busy when ctx ends first.
func (b *Broker) Wait(ctx context.Context) error {
	for {
		if err := b.waitIdle(ctx); err != nil {
			return err
		}
		if len(b.feeders) == 0 {
			return nil
		}
		moved := false
		for _, feed := range b.feeders {
			m, err := feed(ctx)
			if err != nil {
				return err
			}
			moved = moved || m
		}
		// A relay of the App may have published meanwhile: idle only if
		// nothing came since.
		b.mu.Lock()
		idle := b.idleLocked()
		b.mu.Unlock()
		if !moved && idle {
			return nil
		}
	}
}

// waitIdle is Wait without the feeders.
func (b *Broker) waitIdle(ctx context.Context) error {
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
	if b.busy > b.filling || b.callbacks > 0 {
		return false
	}
	if b.state == brokerRunning {
		for name, c := range b.consumers {
			if len(b.queues[name]) > 0 || len(b.queues[c.SuspectQueue()]) > 0 {
				return false
			}
		}
	}
	return true
}

func (b *Broker) describeBusy() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	parts := []string{fmt.Sprintf("%d handler calls in progress", b.busy-b.filling)}
	if b.filling > 0 {
		parts = append(parts, fmt.Sprintf("%d messages waiting for their batch to fill", b.filling))
	}
	if b.callbacks > 0 {
		parts = append(parts, fmt.Sprintf("%d clock callbacks running", b.callbacks))
	}
	names := slices.Sorted(maps.Keys(b.consumers))
	for _, name := range names {
		for _, q := range []string{name, b.consumers[name].SuspectQueue()} {
			if n := len(b.queues[q]); n > 0 && b.state == brokerRunning {
				parts = append(parts, fmt.Sprintf("%d messages queued for %s", n, q))
			}
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

// work is one worker of consumer c: it takes the next message of queue,
// c's queue or its suspect queue (suspect), and settles it, until the
// broker stops.
func (b *Broker) work(c *adapter.Consumer, queue string, suspect bool) {
	for {
		m, ok := b.take(queue)
		if !ok {
			return
		}
		b.deliver(c, m, queue, suspect)
		b.mu.Lock()
		b.busy--
		b.notifyLocked()
		b.mu.Unlock()
	}
}

// take removes the head of queue and counts it as busy; it waits for one,
// and reports false once the broker stops.
func (b *Broker) take(queue string) (queued, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.state != brokerRunning {
			return queued{}, false
		}
		if q := b.queues[queue]; len(q) > 0 {
			b.queues[queue] = q[1:]
			b.busy++
			return q[0], true
		}
		ch := b.changed
		b.mu.Unlock()
		<-ch
		b.mu.Lock()
	}
}

// deliver runs one message of queue (c's, or its suspect queue: suspect)
// through c's Consumer, as a broker adapter does. The handler gets a copy
// of the message, which it may change; the message itself, as it arrived,
// is what the delivery record and the copies sent on are made of.
func (b *Broker) deliver(c *adapter.Consumer, q queued, queue string, suspect bool) {
	m := q.msg
	raw := cloneMessage(m)
	d := &adapter.Delivery{
		MessageID:   m.ID,
		Type:        m.Type,
		ContentType: m.ContentType,
		Headers:     raw.Headers,
		Body:        raw.Body,
		Redelivered: q.redelivered,
		Returned:    q.returned,
		Suspect:     suspect,
		Raw:         raw,
		Source:      m,
		Properties:  m.Properties,
	}
	if c.BrokerRetry() > 0 {
		d.BrokerRetries = q.retried // read where the queue retries by itself, as the adapter does
	}
	v, err := c.Handle(b.handlerCtx, d)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deliveries[c.Name()] = append(b.deliveries[c.Name()], Delivery{
		Subscription: c.Name(),
		Queue:        queue,
		Redelivered:  q.redelivered,
		Attempt:      d.Attempt(),
		MessageType:  m.Type,
		MessageID:    m.ID,
		ContentType:  m.ContentType,
		Headers:      m.Headers,
		Body:         m.Body,
		Verdict:      v,
		Err:          err,
		Time:         b.clock.Now(),
		countHeader:  c.RetryCountHeader(),
	})
}

// memTransport is the in-memory Transport of one subscription: it moves
// copies between the broker's queues and settles deliveries, deciding
// nothing. Only what a real broker does itself is emulated here: a
// RabbitMQ wait queue's TTL returning a copy to its queue.
type memTransport struct {
	b   *Broker
	sub *runtime.Subscription
	// retryDelay is how long the subscription's queue holds a message
	// handed back (RabbitMQ 4.3 delayed retry), 0 when it does not.
	retryDelay time.Duration
}

// Send puts the copy in its queue, and reports the outcome before it
// returns. On RabbitMQ a copy in a wait queue returns to the
// subscription's queue when the TTL passes, unless a subscription consumes
// the wait queue.
func (t *memTransport) Send(ctx context.Context, d *adapter.Delivery, cp *adapter.Copy, done func(error)) {
	done(t.send(ctx, d, cp))
}

func (t *memTransport) send(ctx context.Context, d *adapter.Delivery, cp *adapter.Copy) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("streamtest: send to %q: %w", cp.Queue, err)
	}
	m := d.Source.(runtime.Message) // shares the body, which nobody changes
	m.ID = cp.MessageID
	m.Headers = cp.Headers(m.Headers)
	m.Properties = cp.Properties(m.Properties)
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	seq := b.enqueueLocked(cp.Queue, m)
	if wq, ok := b.waitQueues[cp.Queue]; ok && b.kind == runtime.RabbitMQ {
		b.clock.AfterFunc(wq.ttl, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			q := b.queues[cp.Queue]
			for i := range q {
				if q[i].seq == seq {
					b.queues[cp.Queue] = slices.Delete(q, i, i+1)
					b.enqueueLocked(wq.target, m)
					return
				}
			}
		})
	}
	return nil
}

// Filling counts the subscription's deliveries that wait in a batch that
// is filling (adapter.FillWatcher): the broker is idle while they wait.
func (t *memTransport) Filling(delta int) {
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.filling += delta
	b.notifyLocked()
}

// Ack forgets the delivery.
func (t *memTransport) Ack(context.Context, *adapter.Delivery) error { return nil }

// Reject keeps the delivery among the subscription's rejected messages,
// where a broker-level dead-letter exchange would receive it.
func (t *memTransport) Reject(_ context.Context, d *adapter.Delivery) error {
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	t.b.rejected[t.sub.Name] = append(t.b.rejected[t.sub.Name], d.Source.(runtime.Message))
	return nil
}

// Release puts the delivery back at the head of its queue, redelivered,
// as Requeue does, but not counted as returned: RabbitMQ 4.3 does not
// count a basic.nack with requeue toward a quorum queue's delivery limit.
// A queue that retries by itself holds it for its delay instead, then
// puts it at the end, counted as retried once more.
func (t *memTransport) Release(_ context.Context, d *adapter.Delivery) error {
	if t.retryDelay > 0 && !d.Suspect {
		b := t.b
		m := d.Source.(runtime.Message)
		q := queued{msg: m, redelivered: true, returned: d.Returned, retried: d.BrokerRetries + 1}
		b.clock.AfterFunc(t.retryDelay, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.seq++
			q.seq = b.seq
			b.queues[t.sub.Name] = append(b.queues[t.sub.Name], q)
			b.notifyLocked()
		})
		return nil
	}
	t.handBack(d, d.Returned)
	return nil
}

// Requeue puts the delivery back at the head of its queue, redelivered
// and counted as returned once more, as a quorum queue counts a
// basic.reject with requeue.
func (t *memTransport) Requeue(_ context.Context, d *adapter.Delivery) error {
	t.handBack(d, d.Returned+1)
	return nil
}

// handBack puts d back at the head of the queue it came from, redelivered,
// counted returned times.
func (t *memTransport) handBack(d *adapter.Delivery, returned int) {
	queue := t.sub.Name
	if d.Suspect {
		queue = t.sub.SuspectQueue()
	}
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	b.queues[queue] = append([]queued{{seq: b.seq, msg: d.Source.(runtime.Message), redelivered: true, returned: returned, retried: d.BrokerRetries}}, b.queues[queue]...)
	b.notifyLocked()
}

func (b *Broker) consumerList() []*adapter.Consumer {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*adapter.Consumer, 0, len(b.consumers))
	for _, name := range slices.Sorted(maps.Keys(b.consumers)) {
		out = append(out, b.consumers[name])
	}
	return out
}

func cloneMessage(m runtime.Message) runtime.Message {
	m.Headers = maps.Clone(m.Headers)
	m.Body = bytes.Clone(m.Body)
	return m
}
