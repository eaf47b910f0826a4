package zeromq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/runtime"
)

// inbound is one message read from a connection, not yet parsed.
type inbound struct {
	frames [][]byte
	peer   string
}

// receiver is the PULL side of a subscription: it binds (Bind) or dials a
// ventilator (Dial), reads messages from every connection and puts them on
// out. stop closes every connection and returns once nothing more will be
// put on out.
type receiver struct {
	sub   string
	q     *queueConfig
	limit int64
	out   chan<- inbound
	clock runtime.Clock
	log   *slog.Logger
	// tooLarge reports a message over the size limit; its connection is
	// then closed.
	tooLarge func(peer string, err error)
	// reconnected, when set, is called each time the dial loop reaches the
	// ventilator again after losing it.
	reconnected func()

	ctx   context.Context
	end   context.CancelFunc
	ln    net.Listener
	wg    sync.WaitGroup
	conns connSet
}

func newReceiver(sub string, q *queueConfig, limit int64, out chan<- inbound, clock runtime.Clock, log *slog.Logger, tooLarge func(string, error)) *receiver {
	ctx, end := context.WithCancel(context.Background())
	return &receiver{
		sub: sub, q: q, limit: limit, out: out, clock: clock, log: log, tooLarge: tooLarge,
		ctx: ctx, end: end,
	}
}

// start binds the queue's endpoint, or starts dialling the ventilator.
func (r *receiver) start() error {
	if r.q.ep.role == roleDial {
		r.wg.Go(r.dialLoop)
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(r.ctx, r.q.network, r.q.address)
	if err != nil {
		return fmt.Errorf("zeromq: subscription %q: bind %s: %w", r.sub, r.q.ep.addr, err)
	}
	r.ln = ln
	r.log.Info("zeromq: queue bound", "endpoint", endpointString(ln.Addr()))
	r.wg.Go(func() { acceptLoop(r.ctx, r.ln, &r.conns, &r.wg, r.clock, r.log, "zeromq: accept failed", r.serve) })
	return nil
}

// serve handshakes with a peer that dialled the bound queue, then reads
// its messages until the connection is lost.
func (r *receiver) serve(raw net.Conn) {
	c, err := handshake(raw, zmq4.Pull, true, handshakeTimeout)
	if err != nil {
		if r.ctx.Err() == nil {
			r.log.Warn("zeromq: a peer failed the ZMTP handshake", "peer", raw.RemoteAddr().String(), "err", err)
		}
		return
	}
	r.conns.ready(raw)
	r.read(c)
}

// dialLoop keeps one connection to the ventilator, redialling with backoff
// when it cannot be reached or is lost.
func (r *receiver) dialLoop() {
	var backoff redialBackoff
	failing, connected := false, false
	for r.ctx.Err() == nil {
		var d net.Dialer
		raw, err := d.DialContext(r.ctx, r.q.network, r.q.address)
		var c *conn
		if err == nil {
			if !r.conns.add(raw) {
				raw.Close()
				return
			}
			c, err = handshake(raw, zmq4.Pull, false, handshakeTimeout)
			if err != nil {
				r.conns.remove(raw)
			}
		}
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			if !failing {
				r.log.Warn("zeromq: cannot reach the ventilator; retrying until it answers", "endpoint", r.q.ep.addr, "err", err)
			}
			failing = true
			if backoff.wait(r.ctx, r.clock) != nil {
				return
			}
			continue
		}
		r.conns.ready(raw)
		r.log.Info("zeromq: connected to the ventilator", "endpoint", r.q.ep.addr)
		if connected && r.reconnected != nil {
			r.reconnected()
		}
		failing, connected = false, true
		backoff.reset()
		r.read(c)
		r.conns.remove(raw)
		if r.ctx.Err() == nil {
			r.log.Warn("zeromq: lost the connection to the ventilator; redialling", "endpoint", r.q.ep.addr)
		}
	}
}

// read puts the messages of c on out until c is lost or the receiver stops.
func (r *receiver) read(c *conn) {
	for {
		frames, err := c.readMessage(r.limit)
		if err != nil {
			if errors.Is(err, errMessageTooLarge) {
				r.tooLarge(c.peer, err)
			} else if r.ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				r.log.Warn("zeromq: connection lost", "peer", c.peer, "err", err)
			}
			return
		}
		select {
		case r.out <- inbound{frames: frames, peer: c.peer}:
		case <-r.ctx.Done():
			return
		}
	}
}

// connections returns how many peers are connected (handshake done).
func (r *receiver) connections() int { return r.conns.readyCount() }

// addr is the bound address, or nil for a dialing receiver.
func (r *receiver) addr() net.Addr {
	if r.ln == nil {
		return nil
	}
	return r.ln.Addr()
}

// stop stops receiving: it closes the listener and every connection, and
// returns once no goroutine of the receiver runs.
func (r *receiver) stop() {
	r.end()
	r.conns.close()
	if r.ln != nil {
		r.ln.Close()
	}
	r.wg.Wait()
}
