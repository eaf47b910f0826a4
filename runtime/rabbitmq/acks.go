package rabbitmq

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"
)

// ackIdle is how long the acks of a channel wait after its last
// settlement before they are sent whatever their number.
const ackIdle = time.Millisecond

// stuckTicks is how many idles in a row a delivery still running must
// hold the contiguous tag back before the acks behind it are sent one by
// one (when they are half the prefetch). Shorter, a handler merely
// descheduled on a busy machine would cost a frame per message.
const stuckTicks = 5

// errAcksClosed is what an acker whose channel is gone answers.
var errAcksClosed = errors.New("the consuming channel is closed")

// channelAcks is the part of *amqp091.Channel that settles deliveries;
// tests put a fake in its place.
type channelAcks interface {
	Ack(tag uint64, multiple bool) error
	Nack(tag uint64, multiple, requeue bool) error
	Reject(tag uint64, requeue bool) error
}

// acker settles the deliveries of one consuming channel, and coalesces its
// acks: an ack the Consumer asks for waits, and one basic.ack with
// multiple=true settles many. Such an ack names the highest tag below
// which every delivery is settled, so it never acknowledges a delivery
// whose handler has not finished, and it always names a tag still
// outstanding on the broker. The acks are sent
//
//   - once every tags wait (a quarter of the prefetch), up to the highest
//     contiguous settled tag;
//   - idle after the last settlement, all of them, those behind a
//     delivery still running one by one (on the channel of a batch
//     subscription, only those up to the contiguous tag: see holdGaps);
//   - when a delivery still running has held the contiguous tag back for
//     stuckTicks idles and holds back half the prefetch, all of them too,
//     even while settlements go on: so a slow handler never fills the
//     prefetch window with settled deliveries, while handlers that finish
//     a little out of order, or are descheduled for a few milliseconds,
//     still share one ack;
//   - before a nack on the channel, all of them, so the broker sees the
//     channel's settlements in order;
//   - when the session closes (flush).
//
// Acks still waiting when the channel is lost are lost with it: the broker
// delivers those messages again, as at-least-once delivery allows.
type acker struct {
	ch    channelAcks
	every int
	idle  time.Duration
	log   *slog.Logger
	// holdGaps keeps, at an idle, the acks behind a delivery still
	// running waiting for it rather than sending them one by one, unless
	// the stuck rule holds. It is set for batch subscriptions: deliveries
	// join batches in the order their workers reach them, not in tag
	// order, so a batch that ends often leaves a lower tag running in the
	// next one, and one by one its acks would cost a frame each; they
	// wait for that batch's end, at most its call, and one multiple ack
	// then settles both batches.
	holdGaps bool

	mu sync.Mutex
	// contig is the highest tag below which every delivery is settled.
	contig uint64
	// runs are the settled tags beyond contig+1: sorted, disjoint, and
	// with a gap of at least one unsettled tag before each.
	runs []tagRun
	// pending are the tags settled here and not yet sent, sorted: acked,
	// or handed back (handBack).
	pending []pendingTag
	err     error // why the channel takes no more settlements
	timer   *time.Timer
	armed   bool // the timer is set
	busy    bool // a settlement came since the timer was set
	// stuck counts the ticks in a row at which contig was held at
	// stuckAt.
	stuck   int
	stuckAt uint64
}

// tagRun is the settled delivery tags lo to hi.
type tagRun struct{ lo, hi uint64 }

// pendingTag is a settlement waiting to be sent: an ack, or with
// handBack a basic.nack with requeue.
type pendingTag struct {
	tag      uint64
	handBack bool
}

// newAcker returns the acker of a channel whose prefetch is prefetch.
func newAcker(ch channelAcks, prefetch int, log *slog.Logger) *acker {
	return &acker{ch: ch, every: max(prefetch/4, 1), idle: ackIdle, log: log}
}

// ack settles tag as done; the broker learns it within idle.
func (a *acker) ack(tag uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	return a.holdLocked(pendingTag{tag: tag})
}

// holdLocked settles p.tag and holds its settlement, sent with the others
// as ack describes.
func (a *acker) holdLocked(p pendingTag) error {
	if !a.settle(p.tag) {
		return fmt.Errorf("delivery tag %d is settled already", p.tag)
	}
	a.pending = insertTag(a.pending, p)
	a.busy = true
	if len(a.pending) >= a.every {
		if err := a.sendLocked(false); err != nil {
			return err
		}
	}
	a.armLocked()
	return nil
}

// nack sends every waiting ack, then a basic.nack of tag, with requeue or
// not. The runner's Reject uses it without requeue; a delivery handed
// back to be delivered again goes through handBack, held and coalesced.
func (a *acker) nack(tag uint64, requeue bool) error {
	return a.refuse(tag, func() error { return a.ch.Nack(tag, false, requeue) })
}

// handBack hands tag back to the queue (basic.nack with requeue), held
// and coalesced as acks are: a delivery handed back for the queue to retry
// after its delay (the queue's own delayed retry) is one of every two on a
// busy subscription whose messages fail once, and a run of them in tag
// order costs one basic.nack with multiple=true, one command of the
// queue; or a delivery shutdown hands back unstarted.
func (a *acker) handBack(tag uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	return a.holdLocked(pendingTag{tag: tag, handBack: true})
}

// reject sends every waiting ack, then a basic.reject of tag, with requeue
// or not. Every RabbitMQ counts a basic.reject with requeue toward a
// quorum queue's delivery limit: it is for a delivery whose handler ran
// and which comes back for another try.
func (a *acker) reject(tag uint64, requeue bool) error {
	return a.refuse(tag, func() error { return a.ch.Reject(tag, requeue) })
}

// refuse sends every waiting ack, then settles tag with send.
func (a *acker) refuse(tag uint64, send func() error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	if err := a.sendLocked(true); err != nil {
		return err
	}
	if !a.settle(tag) {
		return fmt.Errorf("delivery tag %d is settled already", tag)
	}
	if err := send(); err != nil {
		return a.failLocked(err)
	}
	return nil
}

// flush sends every waiting ack.
func (a *acker) flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	return a.sendLocked(true)
}

// close marks the channel gone: settlements fail from now on, and acks
// still waiting are dropped (the broker delivers those messages again).
func (a *acker) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.dropLocked(errAcksClosed)
	}
}

// waiting returns how many acks wait to be sent.
func (a *acker) waiting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending)
}

// settle marks tag settled, and reports false when it was already.
func (a *acker) settle(tag uint64) bool {
	if tag <= a.contig {
		return false
	}
	if tag == a.contig+1 {
		a.contig = tag
		if len(a.runs) > 0 && a.runs[0].lo == tag+1 {
			a.contig = a.runs[0].hi
			a.runs = slices.Delete(a.runs, 0, 1)
		}
		return true
	}
	// The first run that ends right before tag, or later.
	i := sort.Search(len(a.runs), func(i int) bool { return a.runs[i].hi+1 >= tag })
	switch {
	case i < len(a.runs) && a.runs[i].lo <= tag && tag <= a.runs[i].hi:
		return false
	case i < len(a.runs) && a.runs[i].hi+1 == tag:
		a.runs[i].hi = tag
		if i+1 < len(a.runs) && a.runs[i+1].lo == tag+1 {
			a.runs[i].hi = a.runs[i+1].hi
			a.runs = slices.Delete(a.runs, i+1, i+2)
		}
	case i < len(a.runs) && a.runs[i].lo == tag+1:
		a.runs[i].lo = tag
	default:
		a.runs = slices.Insert(a.runs, i, tagRun{tag, tag})
	}
	return true
}

// sendLocked sends the waiting settlements up to contig, each run of one
// kind (acks, or hand-backs) in one frame with multiple=true naming the
// highest tag of the run: every delivery up to contig is settled here, and
// those before the run were sent already, so what the broker still holds
// up to that tag is the run. With all, it then sends the others one by
// one.
func (a *acker) sendLocked(all bool) error {
	i := sort.Search(len(a.pending), func(i int) bool { return a.pending[i].tag > a.contig })
	for start := 0; start < i; {
		end := start + 1
		for end < i && a.pending[end].handBack == a.pending[start].handBack {
			end++
		}
		if err := a.send(a.pending[end-1], true); err != nil {
			return err
		}
		start = end
	}
	a.pending = a.pending[:copy(a.pending, a.pending[i:])]
	if all {
		for len(a.pending) > 0 {
			if err := a.send(a.pending[0], false); err != nil {
				return err
			}
			a.pending = a.pending[:copy(a.pending, a.pending[1:])]
		}
	}
	return nil
}

// send sends p's settlement, for the deliveries up to it with multiple.
func (a *acker) send(p pendingTag, multiple bool) error {
	var err error
	if p.handBack {
		err = a.ch.Nack(p.tag, multiple, true)
	} else {
		err = a.ch.Ack(p.tag, multiple)
	}
	if err != nil {
		return a.failLocked(err)
	}
	return nil
}

// armLocked sets the timer when acks wait and it is not set.
func (a *acker) armLocked() {
	if a.armed || len(a.pending) == 0 {
		return
	}
	a.armed, a.busy = true, false
	if a.timer == nil {
		a.timer = time.AfterFunc(a.idle, a.tick)
	} else {
		a.timer.Reset(a.idle)
	}
}

// tick runs idle after the timer was set. When no settlement came since,
// it sends every waiting ack; when some did, it sends them only if a
// delivery still running has held the contiguous tag back for stuckTicks
// ticks and holds back half the prefetch. While acks wait, it waits
// another idle.
func (a *acker) tick() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = false
	if a.err != nil {
		return
	}
	if a.contig == a.stuckAt {
		a.stuck++
	} else {
		a.stuck, a.stuckAt = 0, a.contig
	}
	stuck := a.stuck >= stuckTicks && len(a.pending) >= 2*a.every
	if !a.busy || stuck {
		if err := a.sendLocked(!a.holdGaps || stuck); err != nil {
			return
		}
	}
	a.armLocked()
}

// failLocked marks the channel gone after a failed send, and returns why.
func (a *acker) failLocked(err error) error {
	a.dropLocked(fmt.Errorf("%w: %w", errAcksClosed, err))
	return a.err
}

func (a *acker) dropLocked(err error) {
	a.err = err
	if a.timer != nil {
		a.timer.Stop()
	}
	if n := len(a.pending); n > 0 {
		a.log.Warn("rabbitmq: acks not sent before the consuming channel closed; the broker delivers those messages again",
			"messages", n, "err", err)
	}
	a.pending = nil
	a.runs = nil
}

// insertTag inserts p into the tags sorted by tag. Tags mostly come in
// order, so it looks from the end.
func insertTag(tags []pendingTag, p pendingTag) []pendingTag {
	i := len(tags)
	for i > 0 && tags[i-1].tag > p.tag {
		i--
	}
	return slices.Insert(tags, i, p)
}
