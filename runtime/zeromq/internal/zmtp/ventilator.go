package zmtp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/runtime/clock"
)

// VentilatorConfig configures a Ventilator.
type VentilatorConfig struct {
	// Name is the queue the Ventilator feeds, for logs and errors.
	Name string
	// Network and Address are where to bind; Endpoint is the endpoint as
	// the user wrote it.
	Network, Address, Endpoint string
	// QueueSize is how many messages may wait for one worker's
	// connection (at least 1): a worker whose queue is full is skipped.
	QueueSize int
	// MaxConnections bounds the workers connected at once (0: none), and
	// Hint tells how to raise it.
	MaxConnections int
	Hint           string
	Clock          clock.Clock
	Log            *slog.Logger
}

// errNotWritten is what a message the Ventilator accepted and could not
// write before it closed is lost with.
var errNotWritten = errors.New("the ventilator stopped before a worker took the message; ZeroMQ stores nothing, so it is lost")

// Ventilator is a bound PUSH socket that hands each message to exactly one
// connected worker: the next one in turn whose queue has room, as libzmq's
// PUSH hands it to the next peer whose pipe is below its high-water mark.
// The queues are deep enough that a burst is shared round-robin however
// the goroutines writing to each worker are scheduled. zmq4's own PUSH
// socket writes every message to every peer, so the Ventilator accepts the
// connections itself and speaks ZMTP on each.
type Ventilator struct {
	cfg VentilatorConfig
	srv *Server
	// life bounds the writes; it ends when Close gives up flushing.
	life    context.Context
	endLife context.CancelFunc
	wg      sync.WaitGroup // loss watchers

	mu      sync.Mutex
	peers   []*ventPeer
	next    int
	changed chan struct{} // closed and replaced when a queue has room, or a message is settled while closing
	waiting int           // Sends waiting for room
	closing bool
	pending int // messages accepted and neither written nor lost
	lost    int
}

// ventPeer is one connected worker.
type ventPeer struct {
	c    *Conn
	q    chan item
	gone <-chan struct{} // closed when the connection is lost
	// batch and wire are the messages of a write and their wire form,
	// kept from one write to the next.
	batch []item
	wire  []byte
	ends  []int
}

// Bounds of a batch write: the messages waiting in a worker's queue are
// written together, with one write to its connection, up to batchMessages
// messages or until the batch holds batchBytes (a message larger than that
// is written alone). A wire buffer that grew beyond batchBytes is not kept.
const (
	batchMessages = 128
	batchBytes    = 64 << 10
)

// fullyWritten returns how many messages, of those whose wire forms end at
// ends in a buffer, are in the kernel's send buffer once n bytes of it
// were written.
func fullyWritten(ends []int, n int) int {
	k := 0
	for k < len(ends) && ends[k] <= n {
		k++
	}
	return k
}

// writeBatch writes first and the messages waiting behind it in p.q, as
// many as the batch bounds allow, with one write. It returns the messages
// written; on error, also those that were not (whole), to hand on.
func (p *ventPeer) writeBatch(ctx context.Context, first item) (written, unsent []item, err error) {
	p.batch = append(p.batch[:0], first)
	p.wire = AppendEncode(p.wire[:0], first.frames)
	p.ends = append(p.ends[:0], len(p.wire))
fill:
	for len(p.batch) < batchMessages && len(p.wire) < batchBytes {
		select {
		case it := <-p.q:
			p.batch = append(p.batch, it)
			p.wire = AppendEncode(p.wire, it.frames)
			p.ends = append(p.ends, len(p.wire))
		default:
			break fill
		}
	}
	n, err := p.c.Write(ctx, p.wire)
	k := len(p.batch)
	if err != nil {
		k = fullyWritten(p.ends, n)
	}
	written, unsent = p.batch[:k], p.batch[k:]
	if cap(p.wire) > batchBytes {
		p.wire = nil
	}
	return written, unsent, err
}

// item is one accepted message and what to tell when it is settled.
type item struct {
	frames [][]byte
	done   func(error)
}

// ListenVentilator binds the Ventilator and starts accepting workers.
func ListenVentilator(cfg VentilatorConfig) (*Ventilator, error) {
	cfg.QueueSize = max(cfg.QueueSize, 1)
	srv, err := Listen(cfg.Network, cfg.Address, ServerConfig{
		Type: zmq4.Push, MaxConnections: cfg.MaxConnections, Hint: cfg.Hint, Clock: cfg.Clock, Log: cfg.Log.With("queue", cfg.Name),
	})
	if err != nil {
		return nil, err
	}
	life, endLife := context.WithCancel(context.Background())
	v := &Ventilator{cfg: cfg, srv: srv, life: life, endLife: endLife, changed: make(chan struct{})}
	srv.Serve(v.serve)
	cfg.Log.Info("zeromq: ventilator bound; workers may dial in", "queue", cfg.Name, "endpoint", Endpoint(srv.Addr()))
	return v, nil
}

// Addr returns the bound address.
func (v *Ventilator) Addr() net.Addr { return v.srv.Addr() }

// serve writes a worker's share of the messages until its connection is
// lost.
func (v *Ventilator) serve(c *Conn) {
	p := &ventPeer{c: c, q: make(chan item, v.cfg.QueueSize), gone: WatchGone(&v.wg, c)}
	v.mu.Lock()
	v.peers = append(v.peers, p)
	v.notify()
	n := len(v.peers)
	v.mu.Unlock()
	v.cfg.Log.Info("zeromq: worker connected to ventilator", "queue", v.cfg.Name, "peer", c.Peer(), "workers", n)
	for {
		select {
		case it := <-p.q:
			written, unsent, err := p.writeBatch(v.life, it)
			for _, w := range written {
				v.settle(w, nil)
			}
			if err != nil {
				v.remove(p, unsent)
				return
			}
			clear(p.batch) // let the messages go
		case <-p.gone:
			v.remove(p, nil)
			return
		}
	}
}

// notify wakes whoever waits for a change. v.mu must be held.
func (v *Ventilator) notify() {
	close(v.changed)
	v.changed = make(chan struct{})
}

// settle reports it written (err nil) or lost.
func (v *Ventilator) settle(it item, err error) {
	if it.done != nil {
		it.done(err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pending--
	if err != nil {
		v.lost++
	}
	if v.waiting > 0 || v.closing {
		v.notify()
	}
}

// remove takes a lost worker out of the rotation and hands the messages it
// had not been sent (unsent, first) to the other workers.
func (v *Ventilator) remove(p *ventPeer, unsent []item) {
	p.c.Close()
	v.mu.Lock()
	for i, q := range v.peers {
		if q == p {
			v.peers = append(v.peers[:i], v.peers[i+1:]...)
			if v.next > i {
				v.next--
			}
			break
		}
	}
	n := len(v.peers)
	v.mu.Unlock()
	// No Send puts a message in p.q any more: drain it.
	again := slices.Clone(unsent)
	for len(p.q) > 0 {
		again = append(again, <-p.q)
	}
	v.cfg.Log.Info("zeromq: worker left the ventilator", "queue", v.cfg.Name, "peer", p.c.Peer(), "workers", n, "handed_on", len(again))
	for _, it := range again {
		v.handOn(it)
	}
}

// offer puts it in the queue of the next worker in turn that has room,
// and reports whether one had. v.mu must be held.
func (v *Ventilator) offer(it item) bool {
	n := len(v.peers)
	for i := range n {
		j := (v.next + i) % n
		select {
		case v.peers[j].q <- it:
			v.next = (j + 1) % n
			return true
		default:
		}
	}
	return false
}

// wait waits for a change, or until ctx ends (then it returns false).
// v.mu must be held; wait releases it while waiting and takes it back.
func (v *Ventilator) wait(ctx context.Context) bool {
	ch := v.changed
	v.waiting++
	v.mu.Unlock()
	ok := true
	select {
	case <-ch:
	case <-ctx.Done():
		ok = false
	}
	v.mu.Lock()
	v.waiting--
	return ok
}

// Send hands frames to one worker: the next one in turn whose queue has
// room. It waits while none has, or none is connected, until ctx ends.
// Once it returns nil the message is the Ventilator's: done, unless nil, is
// called once, with nil when the message is written to its worker's
// connection, or with the error that lost it (Close gave up first).
func (v *Ventilator) Send(ctx context.Context, frames [][]byte, done func(error)) error {
	it := item{frames: frames, done: done}
	v.mu.Lock()
	defer v.mu.Unlock()
	for {
		if v.closing {
			return fmt.Errorf("send to queue %q: %w", v.cfg.Name, ErrClosed)
		}
		if v.offer(it) {
			v.pending++
			return nil
		}
		if !v.wait(ctx) {
			return fmt.Errorf("send to queue %q: no worker took the message: %w", v.cfg.Name, ctx.Err())
		}
	}
}

// handOn hands an accepted message of a lost worker to another one,
// waiting for room while the Ventilator lives; it is lost when it cannot.
func (v *Ventilator) handOn(it item) {
	v.mu.Lock()
	for !v.offer(it) {
		if !v.wait(v.life) {
			v.mu.Unlock()
			v.settle(it, errNotWritten)
			return
		}
	}
	v.mu.Unlock()
}

// Connections returns how many workers are connected.
func (v *Ventilator) Connections() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.peers)
}

// Close stops taking messages and flushes: while ctx lasts it goes on
// writing what it accepted, handing the messages of a worker that leaves
// to the others (and to workers that dial in meanwhile). Then it closes the
// listener and every connection. Messages still not written when ctx ends
// are lost: each one's done is told, a warning counts them, and Close
// returns an error saying how many. Closing a closed Ventilator does
// nothing.
func (v *Ventilator) Close(ctx context.Context) error {
	v.mu.Lock()
	if v.closing {
		v.mu.Unlock()
		return nil
	}
	v.closing = true
	v.notify() // Sends waiting for room give up
	for v.pending > 0 && v.wait(ctx) {
	}
	v.mu.Unlock()

	v.endLife() // cuts a write in progress; hand-ons give up
	v.srv.Close()
	v.wg.Wait()

	v.mu.Lock()
	lost := v.lost
	v.mu.Unlock()
	if lost == 0 {
		return nil
	}
	v.cfg.Log.Warn("zeromq: the ventilator stopped before messages it had accepted were written to a worker; they are lost",
		"queue", v.cfg.Name, "lost", lost, "err", ctx.Err())
	return fmt.Errorf("queue %q: %d messages accepted for the ventilator's workers were not written to one before the shutdown deadline; they are lost: %w",
		v.cfg.Name, lost, ctx.Err())
}
