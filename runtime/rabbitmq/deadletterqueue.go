package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// DeadLetterQueue is a RabbitMQ dead-letter queue, as a deadletter.Store:
// what the streamgen dlq command and the console read, replay and purge.
//
// Every operation reads the letters present when it starts, without
// acknowledging them, with consumers of a bounded prefetch (see read), so
// that the client holds a bounded number of letters read ahead whatever
// the queue holds. What it leaves in the queue it hands back at
// the end with basic.nack (multiple, requeue), in the order it read the
// letters (see visit). That keeps the queue as it was:
//   - Classic queues put a requeued message back at its old position. A
//     quorum queue (RabbitMQ 3.10 and 4.3 alike) puts the messages handed
//     back ahead of the others, in the order it gets them: an operation
//     reads the letters from the head of the queue and hands them back in
//     the order it read them, so they keep their order (a letter parked
//     during the operation comes after them).
//   - A quorum queue counts a basic.nack toward its delivery limit on
//     RabbitMQ 3.x, not on 4.3 (where only basic.reject and a closed
//     channel count). streamgen declares its quorum dead-letter queues
//     without a delivery limit on both (x-delivery-limit -1 on 4.x), so
//     reading never dead-letters or drops a letter.
//
// One operation reads the queue at a time, from this process or others
// (streamgen dlq, the console; see lock): two readers would hold letters
// from each other and hand them back in the order of their reading, which
// can move a letter. An operation waits for the one under way, up to its
// patience (5 s for a listing, 15 s for a replay or purge), then fails
// with deadletter.ErrBusy having read nothing. Holders says whether other
// readers (a consumer of a program of your own too) hold letters. A letter
// leaves the queue only by Replay (after the broker confirmed its new
// delivery) or Purge.
type DeadLetterQueue struct {
	name   string
	dialer *dialer // DialDeadLetterQueue's: a connection that closed is dialled again

	mu     sync.Mutex
	conn   *amqp.Connection
	closed bool
	// ended is when the last operation handed its letters back (see
	// Holders).
	ended time.Time
	// turn holds a token while an operation of this DeadLetterQueue reads
	// the queue (see lock); made by turnOf.
	turn chan struct{}
}

var _ deadletter.HoldingStore = (*DeadLetterQueue)(nil)

// roleDeadLetters names the connection of a DeadLetterQueue.
const roleDeadLetters = "dead letters"

// DialDeadLetterQueue connects to the broker at url (one URL, or a comma
// list of a cluster's nodes, as for the Broker) and returns its
// dead-letter queue name. Close closes the connection. When the
// connection closes (the broker restarted, or closed it), the next
// operation connects again.
func DialDeadLetterQueue(ctx context.Context, url, name string) (*DeadLetterQueue, error) {
	q := &DeadLetterQueue{name: name, dialer: newDialer(url, nil, "streamgen dlq "+name, true)}
	conn, err := q.dial(ctx)
	if err != nil {
		return nil, err
	}
	q.conn = conn
	return q, nil
}

func (q *DeadLetterQueue) dial(ctx context.Context) (*amqp.Connection, error) {
	conn, err := q.dialer.dial(ctx, roleDeadLetters)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: dead-letter queue %s: cannot connect: %w", q.name, unprefixed{err})
	}
	return conn.Connection, nil
}

// NewDeadLetterQueue returns the dead-letter queue name on a connection
// the caller owns and closes; when it closes, the operations fail (a
// queue of DialDeadLetterQueue connects again).
func NewDeadLetterQueue(conn *amqp.Connection, name string) *DeadLetterQueue {
	return &DeadLetterQueue{conn: conn, name: name}
}

// Name is the queue's name.
func (q *DeadLetterQueue) Name() string { return q.name }

// Close closes the connection DialDeadLetterQueue opened; it does nothing
// for a queue of NewDeadLetterQueue.
func (q *DeadLetterQueue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if q.dialer == nil || q.conn.IsClosed() { // the broker closed it already
		return nil
	}
	return q.conn.Close()
}

// channel opens a channel. On a queue of DialDeadLetterQueue whose
// connection closed, it connects again first, and once more when the
// connection turns out closed as the channel opens (the client may not
// have seen the broker's close yet).
func (q *DeadLetterQueue) channel() (*amqp.Channel, error) {
	for try := 0; ; try++ {
		conn, err := q.connection()
		if err != nil {
			return nil, err
		}
		ch, err := conn.Channel()
		if err == nil || q.dialer == nil || try > 0 || !errors.Is(err, amqp.ErrClosed) && !conn.IsClosed() {
			return ch, err
		}
		_ = conn.Close() // closed already: the next try dials
	}
}

// connection returns the queue's connection, dialled again when
// DialDeadLetterQueue's closed.
func (q *DeadLetterQueue) connection() (*amqp.Connection, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, fmt.Errorf("rabbitmq: dead-letter queue %s: %w", q.name, amqp.ErrClosed)
	}
	if q.dialer != nil && q.conn.IsClosed() {
		conn, err := q.dial(context.Background())
		if err != nil {
			return nil, err
		}
		q.conn = conn
	}
	return q.conn, nil
}

// Len returns the number of letters ready in the queue, as a passive
// declare reports it (those another dlqReader holds are not counted, see
// Holders; a quorum queue may report a count a moment old).
func (q *DeadLetterQueue) Len(ctx context.Context) (int, error) {
	ch, err := q.channel()
	if err != nil {
		return 0, q.wrap("open a channel", err)
	}
	defer func() { _ = ch.Close() }()
	info, err := ch.QueueDeclarePassive(q.name, true, false, false, false, nil)
	if err != nil {
		return 0, q.wrap("inspect the queue", err)
	}
	return info.Messages, nil
}

// Holders returns the number of readers that hold letters of the queue
// right now: a replay, purge or listing under way, of this DeadLetterQueue
// or another, in this process or another (streamgen dlq, the console).
// Scan, Len and the other operations do not see the letters another
// reader holds, so a listing during a replay lists fewer letters, maybe
// none: with Holders above 0, say so, and to list again once they end.
//
// How many letters they hold AMQP does not tell (the count of
// unacknowledged messages is the management plugin's): Holders is the
// number of consumers the broker counts on the queue. A classic queue
// counts the consumers reading; a quorum queue also counts a reader's
// basic.get and its consumers that stopped while they hold letters. A
// reader between two of its consumers is not counted on a classic queue
// for a moment, so when Holders sees none it looks once more 100 ms
// later. A quorum queue keeps counting a reader for a moment after it
// handed its letters back (some 100 ms, on RabbitMQ 3.10 and 4.3): after
// an operation of this DeadLetterQueue, Holders waits up to 2 s
// (dlqHandBackSettles) for its readers to go.
func (q *DeadLetterQueue) Holders(ctx context.Context) (int, error) {
	ch, err := q.channel()
	if err != nil {
		return 0, q.wrap("open a channel", err)
	}
	defer func() { _ = ch.Close() }()
	q.mu.Lock()
	settled := q.ended.Add(dlqHandBackSettles)
	q.mu.Unlock()
	for looked := false; ; looked = true {
		info, err := ch.QueueDeclarePassive(q.name, true, false, false, false, nil)
		if err != nil {
			return 0, q.wrap("inspect the queue", err)
		}
		var wait time.Duration
		switch {
		case info.Consumers > 0 && time.Now().Before(settled):
			wait = dlqIdleRead / 2 // maybe this DeadLetterQueue's readers, going
		case info.Consumers == 0 && !looked:
			wait = dlqIdleRead // maybe a reader between two consumers
		default:
			return info.Consumers, nil
		}
		if err := deadletter.Sleep(ctx, wait); err != nil {
			return 0, err
		}
	}
}

// dlqHandBackSettles bounds how long Holders waits for a quorum queue to
// stop counting the readers of an operation that handed its letters back
// (some 100 ms was seen; this leaves room for a busy broker).
const dlqHandBackSettles = 2 * time.Second

// Scan calls fn with each letter present in the queue when Scan starts,
// oldest first, and leaves the queue as it was. A deadletter.Letter is fn's to keep.
// An error from fn stops the calls and is returned; the queue is left as
// it was all the same.
func (q *DeadLetterQueue) Scan(ctx context.Context, fn func(*deadletter.Letter) error) error {
	var stopped error
	err := q.visit(ctx, 0, func(l *deadletter.Letter, _ uint64, _ func(uint64) error) error {
		if stopped != nil {
			return nil
		}
		stopped = fn(l)
		return nil
	}, nil)
	return firstErr(err, stopped)
}

// Groups scans the queue and returns its groups.
func (q *DeadLetterQueue) Groups(ctx context.Context) ([]deadletter.Group, error) {
	return deadletter.GroupsOf(ctx, q)
}

// Select calls fn with each letter sel picks, up to its limit, and leaves
// the queue as it was.
func (q *DeadLetterQueue) Select(ctx context.Context, sel deadletter.Selection, fn func(*deadletter.Letter) error) error {
	return deadletter.Select(ctx, q, sel, fn)
}

// Export writes each letter sel picks to w as JSON Lines and leaves the
// queue as it was. It returns the number written.
func (q *DeadLetterQueue) Export(ctx context.Context, w io.Writer, sel deadletter.Selection) (int, error) {
	return deadletter.Export(ctx, q, "queue "+q.name, w, sel)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// visit reads every letter present at its start, calling fn with each
// and the channel it was read on (fn may ack the letter's tag there); then
// it calls finish, if not nil, with what stopped the reading, and at the
// end it hands back every letter not acked.
//
// patience is how long it waits for letters another dlqReader holds when it
// finds the queue empty before it read them all (see read).
func (q *DeadLetterQueue) visit(ctx context.Context, patience time.Duration, fn func(l *deadletter.Letter, tag uint64, ack func(tag uint64) error) error, finish func(error) error) (err error) {
	unlock, err := q.lock(ctx, max(patience, dlqLockPatience))
	if err != nil {
		return err
	}
	defer unlock()
	ch, err := q.channel()
	if err != nil {
		return q.wrap("open a channel", err)
	}
	var ends []uint64   // the last delivery tag of each consumer read used
	var acked dlqTags   // the tags fn acked
	var cur dlqConsumed // the consumer under way
	ack := func(tag uint64) error {
		if err := ch.Ack(tag, false); err != nil {
			return err
		}
		acked.add(tag)
		cur.ack(tag)
		return nil
	}
	defer func() {
		// A quorum queue requeued letters acked just before the channel
		// closed (seen on RabbitMQ 3.10 and 4.3: the acks had not reached
		// it yet), so letters replayed or purged came back. A synchronous
		// basic.get first makes sure they did (a letter it returns is
		// handed back with the rest).
		_, _, _ = ch.Get(q.name, false)
		// Closing a channel with letters outstanding would requeue them
		// too, but a quorum queue counts that toward its delivery limit:
		// hand them back with nacks first. One nack with multiple for
		// the letters of each consumer in turn (each basic.get's letter
		// counts as one), up to its last tag, then one for the rest:
		// RabbitMQ requeues the letters of one nack basic.get by
		// basic.get, then consumer by consumer (see consume), and a
		// quorum queue puts them back in the order it gets them: one
		// nack for several would give them a new order.
		//
		// A nack names a tag still outstanding: RabbitMQ closes the
		// channel on a tag it does not know, one acked or nacked before
		// (a consumer that read nothing ends at the tag of the one before
		// it; the last letter of a consumer may be replayed or purged).
		prev := uint64(0)
		for _, end := range ends {
			if end <= prev {
				continue
			}
			tag := end
			for tag > prev && acked.has(tag) {
				tag--
			}
			if tag > prev {
				if nerr := ch.Nack(tag, true, true); nerr != nil && err == nil {
					err = q.wrap("hand the letters back", nerr)
				}
			}
			prev = end
		}
		if nerr := ch.Nack(0, true, true); nerr != nil && err == nil {
			err = q.wrap("hand the letters back", nerr)
		}
		_ = ch.Close()
		q.mu.Lock()
		q.ended = time.Now()
		q.mu.Unlock()
	}()
	if _, err := ch.QueueDeclarePassive(q.name, true, false, false, false, nil); err != nil {
		return q.wrap("inspect the queue", err)
	}
	err = q.read(ctx, ch, patience, &ends, &cur, func(l *deadletter.Letter, tag uint64) error { return fn(l, tag, ack) })
	if finish != nil {
		err = finish(err)
	}
	return err
}

// read reads the letters present in the queue on ch, calling fn with
// each. How many are present, n, is what the broker answers to a first
// basic.get (the count it gives with a message is the queue's own, while a
// passive declare of a quorum queue on RabbitMQ 3.x may report a stale
// one, 0 just after letters were handed back). n bounds the reading, so
// that letters parked meanwhile do not keep it going.
//
// The rest it reads with consumers (a synchronous basic.get a letter
// costs a round trip each), one at a time. The letters read stay
// unacknowledged (until fn acks one: a replay confirmed, a purge), so a
// consumer delivers at most its prefetch; when it holds that many
// unacknowledged (not picked, or awaiting their replay's confirm), it is
// cancelled and the next one reads on (see consume), as is one whose
// deliveries paused while letters were missing. The prefetch bounds what the
// client holds read ahead of fn (amqp091-go buffers deliveries without
// limit): a listing whose fn is slower than the broker, or a slow replay,
// holds at most one consumer's prefetch of letters.
//
// The first consumer's prefetch is dlqReadWindow (512); each one cancelled
// because it was full hands over to one with twice its prefetch, up to
// what makes about dlqMaxReadAhead bytes of letters of the average size read
// so far (at least dlqReadWindow; 8,192 letters of about 1 KiB). A replay
// of every letter, which acks each once confirmed, keeps its first
// consumer; a listing of many letters uses a few. Each
// consumer's letters are handed back with a nack of their own (see visit),
// since RabbitMQ requeues the letters of several consumers in no set
// order, which was seen to reorder a quorum queue on 3.x; each such
// requeue costs a classic queue more the more letters it holds: some 200
// consumers of 512 letters kept RabbitMQ 3.10 busy for about 7 s after a
// read of 100,000, the read itself took 4 (BenchmarkReplayFew). Hence the
// growing prefetch.
//
// Reading stops sooner when another dlqReader holds the rest: the deliveries
// pause and a basic.get, once the consumer is cancelled, finds the queue
// empty. Every consumer is
// cancelled and its deliveries drained before read returns; letters
// beyond n are not passed to fn and are handed back with the others.
//
// A letter another dlqReader holds is not seen until that dlqReader hands it
// back. Scan does not wait for it (patience 0); Replay and Purge wait up
// to their patience for such letters to come back when the queue looks
// empty, so that a listing running at the same time does not make them
// miss its letters (one held longer is left for the next run).
//
// It appends to ends the last delivery tag of the first basic.get, of
// each consumer and of each basic.get after one, for visit to hand the
// letters back in the order read: consumer by consumer, each basic.get's
// letter on its own.
func (q *DeadLetterQueue) read(ctx context.Context, ch *amqp.Channel, patience time.Duration, ends *[]uint64, cur *dlqConsumed, fn func(l *deadletter.Letter, tag uint64) error) error {
	var d amqp.Delivery
	idle := 0 // passive declares in a row that saw no consumer
	for deadline := time.Now().Add(patience); ; {
		var ok bool
		var err error
		if d, ok, err = ch.Get(q.name, false); err != nil {
			return q.wrap("read a letter", err)
		}
		if ok {
			break
		}
		if !time.Now().Before(deadline) {
			return nil // empty, or another dlqReader holds every letter
		}
		// A listing holds its letters with a consumer: without one, a few
		// times in a row (one listing may follow another), the queue is
		// empty, and there is nothing to wait for.
		info, err := ch.QueueDeclarePassive(q.name, true, false, false, false, nil)
		if err != nil {
			return q.wrap("inspect the queue", err)
		}
		if idle = idle + 1; info.Consumers > 0 {
			idle = 0
		}
		if idle >= 3 {
			return nil
		}
		if err := deadletter.Sleep(ctx, dlqIdleRead); err != nil {
			return err
		}
	}
	r := dlqReader{q: q, ch: ch, fn: fn, n: int(d.MessageCount) + 1, cur: cur, progress: deadletter.Progress(ctx)}
	if err := r.prefetch(dlqReadWindow); err != nil {
		return err
	}
	*ends = append(*ends, d.DeliveryTag)
	r.take(d)
	if r.done() {
		return r.err
	}
	tick := time.NewTicker(dlqIdleRead)
	defer tick.Stop()
	var emptySince time.Time
	for !r.done() {
		took, paused, err := r.consume(ctx, tick.C)
		if r.last > 0 {
			*ends = append(*ends, r.last)
		}
		if err != nil {
			return err
		}
		if r.full {
			if err := r.prefetch(r.nextWindow()); err != nil {
				return err
			}
		}
		empty := false
		if paused && !r.done() {
			// The deliveries paused: another dlqReader may hold the
			// rest. With the consumer gone, a basic.get tells, and the
			// letter it reads is the one after the consumer's, handed
			// back on its own after them.
			d, ok, err := ch.Get(q.name, false)
			if err != nil {
				return q.wrap("read a letter", err)
			}
			if empty = !ok; ok {
				r.take(d)
				*ends = append(*ends, d.DeliveryTag)
				took++
			}
		}
		if !empty || took > 0 {
			emptySince = time.Time{}
			continue
		}
		// A consumer got nothing and basic.get found the queue empty:
		// another dlqReader holds the rest.
		if emptySince.IsZero() {
			emptySince = time.Now()
		}
		if time.Since(emptySince) >= patience {
			break
		}
	}
	return r.err
}

// dlqReader is the state of a read.
type dlqReader struct {
	q        *DeadLetterQueue
	ch       *amqp.Channel
	fn       func(l *deadletter.Letter, tag uint64) error
	n        int  // letters to read
	window   int  // the prefetch of the consumers to come
	full     bool // the last consumer stopped because it held window letters
	cur      *dlqConsumed
	got      int   // letters read
	size     int   // their estimated size in memory, in bytes
	err      error // what fn returned, if not nil
	progress func(int)
	last     uint64 // the last delivery tag seen
}

func (r *dlqReader) done() bool { return r.got >= r.n || r.err != nil }

// prefetch sets the prefetch of the consumers to come (basic.qos, not
// global: the letters an earlier consumer delivered do not count against
// it).
func (r *dlqReader) prefetch(window int) error {
	if window == r.window {
		return nil
	}
	if err := r.ch.Qos(window, 0, false); err != nil {
		return r.q.wrap("limit the letters read ahead", err)
	}
	r.window = window
	return nil
}

// nextWindow is the prefetch of the consumer after one that was full:
// twice its own, up to dlqMaxReadAhead bytes of letters of the average size
// read so far, never below dlqReadWindow. A letter counts at least
// dlqLetterOverhead bytes, so it stays within 8,192 letters, well below the
// most basic.qos takes (65,535).
func (r *dlqReader) nextWindow() int {
	average := max(dlqLetterOverhead, r.size/max(1, r.got))
	return max(dlqReadWindow, min(2*r.window, dlqMaxReadAhead/average))
}

// take passes d on to fn, unless the reading is done.
func (r *dlqReader) take(d amqp.Delivery) {
	r.last = max(r.last, d.DeliveryTag)
	if r.done() {
		return
	}
	r.got++
	r.size += len(d.Body) + dlqLetterOverhead
	r.err = r.fn(letterOf(d), d.DeliveryTag)
	r.progress(r.got)
}

// consume reads with one consumer until the reading is done, its prefetch
// is full (full), or the deliveries pause (paused: nothing came for two
// ticks), then cancels it and takes what it delivered meanwhile: the
// deliveries on their way come before the broker confirms the cancel. It
// returns how many letters it took.
//
// It never reads with basic.get while the consumer is there: the letter a
// basic.get reads then is one after the consumer's (the broker assigned
// the consumer its prefetch already), which may reach the client before
// the consumer's last ones (RabbitMQ's channel takes the answer out of
// turn), and which the consumer's nack hands back before the consumer's
// letters (RabbitMQ hands back the letters of one nack basic.get first,
// then consumer by consumer). A quorum queue puts the letters handed back
// at its head in the order it gets them: a listing whose deliveries paused
// read that letter early and moved it before the consumer's letters (seen
// on RabbitMQ 4.3, the 3,586th letter of a queue becoming the 1,538th:
// the first after the third consumer's, moved before them). read asks
// with basic.get once the consumer is gone.
func (r *dlqReader) consume(ctx context.Context, tick <-chan time.Time) (took int, paused bool, err error) {
	tag := dlqConsumerTag()
	deliveries, err := r.ch.Consume(r.q.name, tag, false, false, false, false, nil)
	if err != nil {
		return 0, false, r.q.wrap("read the letters", err)
	}
	before := r.got
	*r.cur = dlqConsumed{}
	r.full = false
	defer func() {
		// When fn failed (a replay's channel closed), that is what
		// stopped the reading.
		if cerr := r.ch.Cancel(tag, false); cerr != nil && err == nil && r.err == nil {
			err = r.q.wrap("stop reading", cerr)
		}
		// The client closes deliveries once the broker confirmed the
		// cancel; what came before is read, or handed back later.
		for d := range deliveries {
			if err == nil {
				r.take(d)
			} else {
				r.last = max(r.last, d.DeliveryTag)
			}
		}
		took = r.got - before
	}()
	quiet := false
	for !r.done() {
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case d, ok := <-deliveries:
			if !ok {
				return 0, false, r.q.wrap("read the letters", amqp.ErrClosed)
			}
			quiet = false
			r.cur.deliver(d.DeliveryTag)
			r.take(d)
			if r.cur.held() >= r.window {
				// Its prefetch is full of letters held (not picked,
				// or awaiting their replay's confirm): the next
				// consumer reads on.
				r.full = true
				return 0, false, nil
			}
		case <-tick:
			if !quiet {
				quiet = true
				continue
			}
			// Nothing came for a while: another dlqReader may hold the
			// rest (read asks, once this consumer is gone).
			return 0, true, nil
		}
	}
	return 0, false, nil
}

// dlqHoldPatience is how long Replay and Purge wait for letters another
// dlqReader holds (see read).
const dlqHoldPatience = 15 * time.Second

// dlqReadWindow is the prefetch of the first consumer of a read, the most
// letters it delivers before the next one reads on (see read): a slow
// replay of every letter holds at most that many read ahead of it in the
// client.
const dlqReadWindow = 512

// dlqMaxReadAhead is about the most bytes of letters a consumer of a read
// delivers ahead of the reading, once letters are held (see read).
const dlqMaxReadAhead = 8 << 20

// dlqLetterOverhead is about what a letter costs in memory beyond its body
// (the delivery, its headers, the deadletter.Letter): about 1 KiB for a letter
// streamgen parked, measured.
const dlqLetterOverhead = 1024

// dlqIdleRead is how long read waits, twice, for a delivery before it asks
// whether the queue has any left.
const dlqIdleRead = 100 * time.Millisecond

var dlqConsumers atomic.Uint64

// consumerTag returns a consumer tag unique on the connection.
func dlqConsumerTag() string {
	return fmt.Sprintf("streamgen-dlq-%d-%d", os.Getpid(), dlqConsumers.Add(1))
}

// wrap names the queue in an error, with the fix for the common cases.
func (q *DeadLetterQueue) wrap(doing string, err error) error {
	var aerr *amqp.Error
	if errors.As(err, &aerr) && aerr.Code == amqp.NotFound {
		return fmt.Errorf("rabbitmq: dead-letter queue %s does not exist: check the name (a subscription's dead-letter queue is the one its dead_letter= key names): %w", q.name, err)
	}
	if errors.As(err, &aerr) && aerr.Code == amqp.AccessRefused {
		return fmt.Errorf("rabbitmq: dead-letter queue %s: access refused: use a user with read, write and configure permission on it: %w", q.name, err)
	}
	return fmt.Errorf("rabbitmq: dead-letter queue %s: cannot %s: %w", q.name, doing, err)
}

// dlqConsumed counts the letters a consumer delivered and fn acked, to tell
// when its prefetch is full.
type dlqConsumed struct {
	first     uint64 // its first delivery tag; 0 before it delivers
	delivered int
	acked     int
}

func (c *dlqConsumed) deliver(tag uint64) {
	if c.first == 0 {
		c.first = tag
	}
	c.delivered++
}

func (c *dlqConsumed) ack(tag uint64) {
	if c.first != 0 && tag >= c.first {
		c.acked++
	}
}

// held is the number of its letters unacknowledged.
func (c *dlqConsumed) held() int { return c.delivered - c.acked }

// dlqTags is a set of delivery tags, which a channel numbers from 1 up.
type dlqTags struct{ bits []uint64 }

func (s *dlqTags) add(tag uint64) {
	i := tag / 64
	for uint64(len(s.bits)) <= i {
		s.bits = append(s.bits, 0)
	}
	s.bits[i] |= 1 << (tag % 64)
}

func (s *dlqTags) has(tag uint64) bool {
	i := tag / 64
	return i < uint64(len(s.bits)) && s.bits[i]&(1<<(tag%64)) != 0
}

// DeadLetterOpener returns a function that connects to RabbitMQ at url
// for each RabbitMQ dead-letter queue of an App (DialDeadLetterQueue): the
// opener console.ForApp takes. For a ZeroMQ queue it fails: open the
// keeper's directory for it (zeromq.OpenDeadLetterDir).
func DeadLetterOpener(url string) func(ctx context.Context, q runtime.DeadLetterQueue) (deadletter.Store, error) {
	return func(ctx context.Context, q runtime.DeadLetterQueue) (deadletter.Store, error) {
		if q.Broker != runtime.RabbitMQ {
			return nil, fmt.Errorf("rabbitmq: dead-letter queue %s is on %s: open its keeper's directory instead (zeromq.OpenDeadLetterDir)", q.Name, q.Broker)
		}
		return DialDeadLetterQueue(ctx, url, q.Name)
	}
}

// unnamed returns err with its "rabbitmq: dead-letter queue NAME: " prefix
// (wrap's) cut, for a message that names the queue already.
func (q *DeadLetterQueue) unnamed(err error) error {
	if p := "rabbitmq: dead-letter queue " + q.name + ": "; strings.HasPrefix(err.Error(), p) {
		return cut{err, p}
	}
	return err
}

// cut is an error with a prefix of its message cut.
type cut struct {
	error
	prefix string
}

func (e cut) Error() string { return strings.TrimPrefix(e.error.Error(), e.prefix) }
func (e cut) Unwrap() error { return e.error }

// unprefixed is an error of this package with its "rabbitmq: " prefix cut,
// for a message that has it already.
type unprefixed struct{ error }

func (e unprefixed) Error() string { return strings.TrimPrefix(e.error.Error(), "rabbitmq: ") }
func (e unprefixed) Unwrap() error { return e.error }

// dlqLockPatience is the least time an operation waits for another to
// end before it gives up with deadletter.ErrBusy (Replay and Purge wait
// their own patience, dlqHoldPatience).
const dlqLockPatience = 5 * time.Second

// turnOf returns q's turn token channel, made on first use.
func (q *DeadLetterQueue) turnOf() chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.turn == nil {
		q.turn = make(chan struct{}, 1)
	}
	return q.turn
}

// lock makes the operation the queue's only reader until unlock: two
// readers at once hold letters from each other and hand them back in an
// order of their reading, which was seen to move a letter another reader
// handed back to the end of a quorum queue. Within this process a token
// of the DeadLetterQueue orders its operations; across processes (streamgen
// dlq, the console, each with a connection of its own), an exclusive,
// auto-deleted queue named after the dead-letter queue
// (dlqLockPrefix+name) is the lock: the broker lets one connection
// declare it, and deletes it with that connection, should the holder die.
// lock waits up to patience for the holder to end, then fails with
// deadletter.ErrBusy. A user without configure permission on the lock's
// name reads without the lock across processes.
func (q *DeadLetterQueue) lock(ctx context.Context, patience time.Duration) (unlock func(), err error) {
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	turn := q.turnOf()
	select {
	case turn <- struct{}{}:
	case <-deadline.C:
		return nil, q.busy()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release := func() { <-turn }
	name := dlqLockPrefix + q.name
	backoff := 20 * time.Millisecond
	for {
		ch, err := q.channel()
		if err != nil {
			release()
			return nil, q.wrap("open a channel", err)
		}
		_, err = ch.QueueDeclare(name, false, true, true, false, nil)
		if err == nil {
			return func() {
				_, _ = ch.QueueDelete(name, false, false, false)
				_ = ch.Close()
				release()
			}, nil
		}
		_ = ch.Close()
		var aerr *amqp.Error
		if errors.As(err, &aerr) && aerr.Code == amqp.AccessRefused {
			return release, nil // no lock to be had: read without it
		}
		if !errors.As(err, &aerr) || aerr.Code != amqp.ResourceLocked {
			release()
			return nil, q.wrap("take the queue's reading lock", err)
		}
		select {
		case <-time.After(backoff):
			backoff = min(2*backoff, 500*time.Millisecond)
		case <-deadline.C:
			release()
			return nil, q.busy()
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
}

// dlqLockPrefix names the exclusive queue that is a dead-letter queue's
// reading lock (see lock).
const dlqLockPrefix = "streamgen.dlq-lock."

// busy is deadletter.ErrBusy for q, with the queue's own count.
func (q *DeadLetterQueue) busy() error {
	return fmt.Errorf("rabbitmq: dead-letter queue %s: %w: run this again when it ends", q.name, deadletter.ErrBusy)
}
