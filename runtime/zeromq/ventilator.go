package zeromq

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/runtime"
)

// peerQueue is how many messages may wait for one worker's connection.
// It is small so that a slow worker is skipped rather than handed a backlog.
const peerQueue = 4

// ventilator is a bound PUSH socket that hands each message to exactly one
// connected worker, round-robin among the live workers whose connection
// has room. zmq4's PUSH socket writes every message to every peer, so the
// runtime accepts the connections itself and speaks ZMTP on each.
type ventilator struct {
	queue string
	ln    net.Listener
	clock runtime.Clock
	log   *slog.Logger
	life  context.Context
	end   context.CancelFunc

	mu      sync.Mutex
	peers   []*ventPeer
	next    int
	changed chan struct{} // closed and replaced when a peer may take a message
	closed  bool
	conns   connSet
	wg      sync.WaitGroup
}

// ventPeer is one connected worker.
type ventPeer struct {
	c    *conn
	out  chan [][]byte
	gone <-chan struct{} // closed when the connection is lost
}

// listenVentilator binds the ventilator of queue q and starts accepting
// workers.
func listenVentilator(life context.Context, q *queueConfig, clock runtime.Clock, log *slog.Logger) (*ventilator, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(life, q.network, q.address)
	if err != nil {
		return nil, fmt.Errorf("zeromq: queue %q: bind ventilator at %s: %w", q.name, q.ep.addr, err)
	}
	ctx, end := context.WithCancel(life)
	v := &ventilator{
		queue: q.name, ln: ln, clock: clock, log: log, life: ctx, end: end,
		changed: make(chan struct{}),
	}
	v.wg.Go(func() {
		acceptLoop(v.life, v.ln, &v.conns, &v.wg, v.clock, v.log.With("queue", v.queue), "zeromq: ventilator accept failed", v.serve)
	})
	log.Info("zeromq: ventilator bound; workers may dial in", "queue", q.name, "endpoint", endpointString(ln.Addr()))
	return v, nil
}

func (v *ventilator) addr() net.Addr { return v.ln.Addr() }

// serve handshakes with a worker, then writes its share of the messages
// until the connection is lost.
func (v *ventilator) serve(raw net.Conn) {
	c, err := handshake(raw, zmq4.Push, true, handshakeTimeout)
	if err != nil {
		v.log.Warn("zeromq: a peer of the ventilator failed the ZMTP handshake", "queue", v.queue, "peer", raw.RemoteAddr().String(), "err", err)
		return
	}
	p := &ventPeer{c: c, out: make(chan [][]byte, peerQueue), gone: watchGone(&v.wg, c)}
	v.mu.Lock()
	v.peers = append(v.peers, p)
	v.notify()
	n := len(v.peers)
	v.mu.Unlock()
	v.log.Info("zeromq: worker connected to ventilator", "queue", v.queue, "peer", c.peer, "workers", n)
	for {
		select {
		case frames := <-p.out:
			if err := c.writeMessage(v.life, frames); err != nil {
				v.remove(p, frames)
				return
			}
			v.mu.Lock()
			v.notify()
			v.mu.Unlock()
		case <-p.gone:
			v.remove(p, nil)
			return
		}
	}
}

// notify wakes the senders waiting for a peer. v.mu must be held.
func (v *ventilator) notify() {
	close(v.changed)
	v.changed = make(chan struct{})
}

// remove takes a lost worker out of the rotation and hands the messages it
// had not been sent (unsent, first) to the other workers.
func (v *ventilator) remove(p *ventPeer, unsent [][]byte) {
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
	// No sender puts a message in p.out any more: drain it.
	var again [][][]byte
	if unsent != nil {
		again = append(again, unsent)
	}
	for len(p.out) > 0 {
		again = append(again, <-p.out)
	}
	v.log.Info("zeromq: worker left the ventilator", "queue", v.queue, "peer", p.c.peer, "workers", n, "handed_on", len(again))
	for i, frames := range again {
		if err := v.send(v.life, frames); err != nil {
			v.log.Warn("zeromq: ventilator stopped before messages of a lost worker were handed on; they are lost",
				"queue", v.queue, "lost", len(again)-i, "err", err)
			return
		}
	}
}

// send hands frames to one worker: the next one in turn whose connection
// has room. It waits for a worker when none has, or none is connected.
func (v *ventilator) send(ctx context.Context, frames [][]byte) error {
	for {
		v.mu.Lock()
		if v.closed {
			v.mu.Unlock()
			return errClosed
		}
		n := len(v.peers)
		for i := range n {
			j := (v.next + i) % n
			select {
			case v.peers[j].out <- frames:
				v.next = (j + 1) % n
				v.mu.Unlock()
				return nil
			default:
			}
		}
		changed := v.changed
		v.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("zeromq: send to queue %q: no worker took the message: %w", v.queue, ctx.Err())
		}
	}
}

func (v *ventilator) connections() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.peers)
}

// close stops accepting, closes every connection and waits for the
// ventilator's goroutines. Messages not yet written are lost.
func (v *ventilator) close() {
	v.mu.Lock()
	v.closed = true
	v.notify()
	v.mu.Unlock()
	v.conns.close()
	v.end()
	v.ln.Close()
	v.wg.Wait()
}
