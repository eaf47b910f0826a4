package zeromq

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// outbox holds the copies (retry copies, dead letters) this service sends
// to one queue, so that a queue that does not answer holds back no
// subscription until the outbox is full. One goroutine sends them, in
// order. A copy counts against the size until it is written.
type outbox struct {
	queue string
	s     sender
	log   *slog.Logger

	slots chan struct{} // one per copy held
	items chan copyItem // as many as slots, so a put with a slot never blocks
	full  atomic.Bool   // warned that the outbox is full, since it was last empty

	// ctx is that of the sends; it ends when flush gives up.
	ctx  context.Context
	end  context.CancelFunc
	stop chan struct{} // closed when flush gives up
	ran  chan struct{} // closed when run returns
	puts sync.WaitGroup

	mu      sync.Mutex
	closed  bool // flush began: no more puts
	pending int  // copies put and not settled
	idle    chan struct{}
	cause   error // why flush gave up
	lost    int   // copies lost at shutdown
}

// copyItem is one copy and whom to tell when it is settled.
type copyItem struct {
	frames [][]byte
	done   func(error)
}

func newOutbox(queue string, s sender, size int, log *slog.Logger) *outbox {
	ctx, end := context.WithCancel(context.Background())
	o := &outbox{
		queue: queue, s: s, log: log,
		slots: make(chan struct{}, size), items: make(chan copyItem, size),
		ctx: ctx, end: end, stop: make(chan struct{}), ran: make(chan struct{}),
	}
	go o.run()
	return o
}

// put adds a copy. It returns at once while the outbox has room. When it is
// full it warns (once until the outbox empties again), and the copy waits
// for room until ctx ends (it is then lost): in the caller when hold is
// set, which holds the caller back, else in a goroutine of its own. it.done
// is called once, when the copy is settled.
func (o *outbox) put(ctx context.Context, it copyItem, hold bool) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		it.done(o.giveUp(errClosed))
		return
	}
	o.pending++
	o.puts.Add(1)
	o.mu.Unlock()
	select {
	case o.slots <- struct{}{}:
		o.items <- it
		o.puts.Done()
		return
	default:
	}
	if o.full.CompareAndSwap(false, true) {
		then := "the subscription sending a copy waits for room"
		if !hold {
			then = "copies wait in memory for room: this service reads the queue itself, so no subscription waits for it"
		}
		o.log.Warn("zeromq: the outbox of a queue is full: the queue does not take copies as fast as they come",
			"queue", o.queue, "outbox_size", cap(o.slots), "then", then)
	}
	if !hold {
		go o.waitForRoom(ctx, it)
		return
	}
	o.waitForRoom(ctx, it)
}

// waitForRoom adds it once the outbox has room, or settles it as lost when
// ctx ends or flush gives up first. It ends a put.
func (o *outbox) waitForRoom(ctx context.Context, it copyItem) {
	defer o.puts.Done()
	select {
	case o.slots <- struct{}{}:
		o.items <- it
	case <-ctx.Done():
		o.settle(it, false, o.giveUp(ctx.Err()))
	case <-o.stop:
		o.settle(it, false, o.giveUp(nil))
	}
}

// run sends the copies until flush gives up, then settles those left as
// lost.
func (o *outbox) run() {
	defer close(o.ran)
	for {
		select {
		case it := <-o.items:
			if bs, ok := o.s.(batchSender); ok {
				o.sendBatch(bs, it)
				continue
			}
			err := o.s.send(o.ctx, it.frames, func(err error) { o.settle(it, true, err) })
			if err != nil {
				if o.ctx.Err() != nil {
					err = o.giveUp(nil) // flush cut the send
				}
				o.settle(it, true, err)
			}
		case <-o.stop:
			for {
				select {
				case it := <-o.items:
					o.settle(it, true, o.giveUp(nil))
				default:
					return
				}
			}
		}
	}
}

// Bounds of a batch of copies written together: the copies waiting in the
// outbox behind the first, up to outboxBatch copies or outboxBatchBytes of
// bodies.
const (
	outboxBatch      = 128
	outboxBatchBytes = 64 << 10
)

// sendBatch sends first and the copies waiting behind it, as many as the
// batch bounds allow, with bs, and settles each.
func (o *outbox) sendBatch(bs batchSender, first copyItem) {
	batch := []copyItem{first}
	msgs := [][][]byte{first.frames}
	size := frameBytes(first.frames)
fill:
	for len(batch) < outboxBatch && size < outboxBatchBytes {
		select {
		case it := <-o.items:
			batch = append(batch, it)
			msgs = append(msgs, it.frames)
			size += frameBytes(it.frames)
		default:
			break fill
		}
	}
	n, err := bs.sendBatch(o.ctx, msgs)
	for i, it := range batch {
		switch {
		case i < n:
			o.settle(it, true, nil)
		case o.ctx.Err() != nil:
			o.settle(it, true, o.giveUp(nil)) // flush cut the send
		default:
			o.settle(it, true, err)
		}
	}
}

// frameBytes is the size of a message's frames.
func frameBytes(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	return n
}

// giveUp counts a copy lost at shutdown and says why: cause, or else why
// flush gave up.
func (o *outbox) giveUp(cause error) error {
	o.mu.Lock()
	o.lost++
	if cause == nil {
		cause = o.cause
	}
	o.mu.Unlock()
	return fmt.Errorf("zeromq: the copy for queue %q was still in its outbox when the service stopped (%w): the queue did not take it in time, and ZeroMQ stores nothing, so it is lost", o.queue, cause)
}

// settle tells it.done and frees its slot (when it held one).
func (o *outbox) settle(it copyItem, slot bool, err error) {
	it.done(err)
	if slot {
		<-o.slots
		if len(o.slots) == 0 {
			o.full.Store(false)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending--
	if o.pending == 0 && o.idle != nil {
		close(o.idle)
		o.idle = nil
	}
}

// flush takes no more copies, waits while ctx lasts for those held to be
// settled, then gives up on the rest: each is settled as lost, and flush
// returns how many. A copy already handed to a ventilator is the
// ventilator's to flush.
func (o *outbox) flush(ctx context.Context) int {
	o.mu.Lock()
	o.closed = true
	var idle chan struct{}
	if o.pending > 0 {
		o.idle = make(chan struct{})
		idle = o.idle
	}
	o.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
	o.mu.Lock()
	o.cause = ctx.Err()
	if o.cause == nil {
		o.cause = errClosed
	}
	o.mu.Unlock()
	o.end()       // cuts the send in progress
	close(o.stop) // puts waiting for room give up; run settles what it holds
	o.puts.Wait()
	<-o.ran
	for {
		select {
		case it := <-o.items: // put after run returned
			o.settle(it, true, o.giveUp(nil))
		default:
			o.mu.Lock()
			defer o.mu.Unlock()
			return o.lost
		}
	}
}
