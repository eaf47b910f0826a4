package zmtp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/runtime/clock"
)

// ErrClosed is returned by a Pusher or Ventilator once it is closed.
var ErrClosed = errors.New("the socket is closed")

// Pusher is a PUSH socket that dials a bound PULL over one connection,
// redialling when the connection is lost. Like a ZeroMQ PUSH with no peer,
// Send waits (redialling with backoff) until the peer can be reached or its
// context ends; it returns once the message is written, so nothing a
// Pusher accepted waits in memory.
type Pusher struct {
	name   string // the queue, for logs and errors
	target func() (network, address string, err error)
	clock  clock.Clock
	log    *slog.Logger

	// dialing ends when the Pusher closes: a Send still dialling gives
	// up then.
	dialing    context.Context
	endDialing context.CancelFunc

	turn chan struct{} // one send at a time
	// wire and ends are the wire form of a send's messages and where each
	// ends, kept from one send to the next; they belong to the turn.
	wire []byte
	ends []int

	mu      sync.Mutex
	c       *Conn
	lost    <-chan struct{} // closed when c is lost
	writing bool            // a Send is writing to c
	closed  bool
	wg      sync.WaitGroup
}

func (p *Pusher) setWriting(w bool) {
	p.mu.Lock()
	p.writing = w
	p.mu.Unlock()
}

// NewPusher returns a Pusher to queue name. target says where the peer is
// each time the Pusher dials; an error from it is final (the peer will not
// come back), and Send returns it.
func NewPusher(name string, target func() (network, address string, err error), clock clock.Clock, log *slog.Logger) *Pusher {
	ctx, end := context.WithCancel(context.Background())
	return &Pusher{name: name, target: target, clock: clock, log: log, dialing: ctx, endDialing: end, turn: make(chan struct{}, 1)}
}

// Send writes frames as one message. It returns nil once the message is in
// the kernel's send buffer.
func (p *Pusher) Send(ctx context.Context, frames [][]byte) error {
	_, err := p.SendBatch(ctx, [][][]byte{frames})
	return err
}

// SendBatch writes msgs, each the frames of one message, in order, with
// one write to the connection (more when it has to redial). It returns how
// many of them, from the first, are in the kernel's send buffer, and an
// error when that is not all of them.
func (p *Pusher) SendBatch(ctx context.Context, msgs [][][]byte) (int, error) {
	select {
	case p.turn <- struct{}{}:
	case <-p.dialing.Done():
		return 0, fmt.Errorf("send to queue %q: %w", p.name, ErrClosed)
	case <-ctx.Done():
		return 0, fmt.Errorf("send to queue %q: %w", p.name, ctx.Err())
	}
	defer func() { <-p.turn }()
	written, failed := 0, -1
	for {
		c, err := p.current(ctx)
		if err != nil {
			return written, err
		}
		p.wire, p.ends = p.wire[:0], p.ends[:0]
		for _, m := range msgs[written:] {
			p.wire = AppendEncode(p.wire, m)
			p.ends = append(p.ends, len(p.wire))
		}
		p.setWriting(true)
		n, err := c.Write(ctx, p.wire)
		p.setWriting(false)
		written += fullyWritten(p.ends, n)
		if cap(p.wire) > batchBytes {
			p.wire = nil
		}
		if err == nil {
			return written, nil
		}
		p.drop(c)
		// A message cut short is discarded by the peer, so one more try
		// on a fresh connection cannot deliver it twice. Only one per
		// message: a peer that hangs up on a message (over its size
		// limit) would hang up again.
		if ctx.Err() != nil || written == failed {
			return written, fmt.Errorf("send to queue %q: %w", p.name, err)
		}
		failed = written
	}
}

// current returns the live connection, dialling one when there is none.
func (p *Pusher) current(ctx context.Context) (*Conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("send to queue %q: %w", p.name, ErrClosed)
	}
	if p.c != nil {
		select {
		case <-p.lost:
			p.c.Close()
			p.c = nil
		default:
			c := p.c
			p.mu.Unlock()
			return c, nil
		}
	}
	p.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.dialing, cancel)
	defer stop()
	var backoff Backoff
	for attempt := 1; ; attempt++ {
		c, addr, err := p.dial(ctx)
		if err == nil {
			if attempt > 1 {
				p.log.Info("zeromq: reached queue", "queue", p.name, "endpoint", addr)
			}
			return p.keep(c)
		}
		if addr == "" || p.dialing.Err() != nil {
			// The target said no, or the Pusher closed.
			return nil, fmt.Errorf("send to queue %q: %w", p.name, errors.Join(err, p.closedErr()))
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("send to queue %q: %w", p.name, errors.Join(ctx.Err(), err))
		}
		if attempt == 1 {
			p.log.Warn("zeromq: cannot reach queue; retrying until it answers", "queue", p.name, "endpoint", addr, "err", err)
		}
		if err := backoff.Wait(ctx, p.clock); err != nil {
			return nil, fmt.Errorf("send to queue %q: %w", p.name, errors.Join(err, p.closedErr()))
		}
	}
}

// closedErr is ErrClosed once the Pusher is closed, else nil.
func (p *Pusher) closedErr() error {
	if p.dialing.Err() != nil {
		return ErrClosed
	}
	return nil
}

// dial reaches the target. It returns the address it dialled, "" when the
// target itself failed.
func (p *Pusher) dial(ctx context.Context) (*Conn, string, error) {
	network, address, err := p.target()
	if err != nil {
		return nil, "", err
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, address, err
	}
	c, err := Handshake(raw, zmq4.Push, false, HandshakeTimeout)
	if err != nil {
		raw.Close()
		return nil, address, err
	}
	return c, address, nil
}

// keep makes c the live connection and watches it for its loss.
func (p *Pusher) keep(c *Conn) (*Conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return nil, fmt.Errorf("send to queue %q: %w", p.name, ErrClosed)
	}
	p.c, p.lost = c, WatchGone(&p.wg, c)
	return c, nil
}

// drop closes c after a failed write.
func (p *Pusher) drop(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.Close()
	if p.c == c {
		p.c = nil
	}
}

// Connections returns 1 while the Pusher is connected to its peer, else 0.
func (p *Pusher) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return 0
	}
	select {
	case <-p.lost:
		return 0
	default:
		return 1
	}
}

// Close closes the Pusher. A Send still dialling gives up at once; one
// writing may finish while ctx lasts, and is cut (its Send fails) when ctx
// ends. Close then closes the connection and waits for the Pusher's
// goroutines. It returns an error when it cut a write. Closing a closed
// Pusher does nothing.
func (p *Pusher) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.endDialing()
	idle := false // no Send runs: Close holds the turn
	select {
	case p.turn <- struct{}{}:
		idle = true
	default:
		select {
		case p.turn <- struct{}{}:
			idle = true
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	cut := !idle && p.writing
	if p.c != nil {
		p.c.Close()
	}
	p.mu.Unlock()
	if !idle {
		p.turn <- struct{}{} // the Send returns now that its connection is closed
	}
	p.wg.Wait()
	if cut {
		return fmt.Errorf("queue %q: a message being written when the shutdown deadline passed was cut short: %w", p.name, ctx.Err())
	}
	return nil
}
