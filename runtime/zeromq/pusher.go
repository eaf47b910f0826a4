package zeromq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/runtime"
)

// sender sends messages to one queue.
type sender interface {
	send(ctx context.Context, frames [][]byte) error
	// connections returns how many peers are connected.
	connections() int
	// close closes the connections and waits for the sender's goroutines.
	close()
}

// handshakeTimeout bounds the ZMTP handshake with a peer.
const handshakeTimeout = 10 * time.Second

// errClosed is returned by a sender or Publish after Shutdown.
var errClosed = errors.New("zeromq: the broker is shut down")

// pusher is a PUSH socket that dials a bound queue over one connection,
// redialling when the connection is lost. Like a ZeroMQ PUSH with no peer,
// send waits (retrying) until the queue can be reached or ctx ends.
type pusher struct {
	queue  string
	target func() (network, address string, err error)
	clock  runtime.Clock
	log    *slog.Logger
	life   context.Context

	turn chan struct{} // one send at a time

	mu     sync.Mutex
	c      *conn
	lost   <-chan struct{} // closed when c is lost
	closed bool
	wg     sync.WaitGroup
}

func newPusher(life context.Context, queue string, target func() (string, string, error), clock runtime.Clock, log *slog.Logger) *pusher {
	return &pusher{queue: queue, target: target, clock: clock, log: log, life: life, turn: make(chan struct{}, 1)}
}

func (p *pusher) send(ctx context.Context, frames [][]byte) error {
	select {
	case p.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.turn }()
	for tries := 0; ; tries++ {
		c, err := p.current(ctx)
		if err != nil {
			return err
		}
		err = c.writeMessage(ctx, frames)
		if err == nil {
			return nil
		}
		p.drop(c)
		// A message cut short is discarded by the peer, so one more try
		// on a fresh connection cannot deliver it twice.
		if ctx.Err() != nil || tries > 0 {
			return fmt.Errorf("zeromq: send to queue %q: %w", p.queue, err)
		}
	}
}

// current returns the live connection, dialling one when there is none.
func (p *pusher) current(ctx context.Context) (*conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
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
	stop := context.AfterFunc(p.life, cancel)
	defer stop()
	var backoff redialBackoff
	for attempt := 1; ; attempt++ {
		c, addr, err := p.dial(ctx)
		if err == nil {
			if attempt > 1 {
				p.log.Info("zeromq: reached queue", "queue", p.queue, "endpoint", addr)
			}
			return p.keep(c)
		}
		if errors.Is(err, errQueueClosing) || p.life.Err() != nil {
			return nil, fmt.Errorf("zeromq: send to queue %q: %w", p.queue, errors.Join(err, p.life.Err()))
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("zeromq: send to queue %q: %w", p.queue, errors.Join(ctx.Err(), err))
		}
		if attempt == 1 {
			p.log.Warn("zeromq: cannot reach queue; retrying until it answers", "queue", p.queue, "endpoint", addr, "err", err)
		}
		if err := backoff.wait(ctx, p.clock); err != nil {
			return nil, fmt.Errorf("zeromq: send to queue %q: %w", p.queue, err)
		}
	}
}

func (p *pusher) dial(ctx context.Context) (*conn, string, error) {
	network, address, err := p.target()
	if err != nil {
		return nil, "", err
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, address, err
	}
	c, err := handshake(raw, zmq4.Push, false, handshakeTimeout)
	if err != nil {
		raw.Close()
		return nil, address, err
	}
	return c, address, nil
}

// keep makes c the live connection and watches it for its loss.
func (p *pusher) keep(c *conn) (*conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return nil, errClosed
	}
	p.c, p.lost = c, watchGone(&p.wg, c)
	return c, nil
}

// drop closes c after a failed write.
func (p *pusher) drop(c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.Close()
	if p.c == c {
		p.c = nil
	}
}

func (p *pusher) connections() int {
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

func (p *pusher) close() {
	p.mu.Lock()
	p.closed = true
	if p.c != nil {
		p.c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
