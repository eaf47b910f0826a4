package zmtp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/runtime/clock"
)

// PullConfig configures a Puller.
type PullConfig struct {
	// Network and Address are where to bind, or the ventilator to dial
	// ("tcp" or "unix").
	Network, Address string
	// Endpoint is the endpoint as the user wrote it, for the logs.
	Endpoint string
	// Dial makes the Puller dial a ventilator, instead of binding.
	Dial bool
	// Limit bounds a message, all frames together; a larger one closes
	// its connection and is reported to TooLarge.
	Limit int64
	// Keep is how many frames of a message are kept (see ReadMessage).
	Keep int
	// Budget, when set, bounds the bytes of the messages read from every
	// connection and not yet released (see ReadMessageWithin): Deliver
	// gets each message's share, which its taker gives back. Lead bounds
	// the frames of a message before its last.
	Budget *Budget
	Lead   int64
	// MaxConnections bounds the connections of a bound Puller (0: none),
	// and Hint tells how to raise it.
	MaxConnections int
	Hint           string
	Clock          clock.Clock
	Log            *slog.Logger
	// Deliver takes each message read, with the bytes it holds of Budget
	// (0 without one), which the taker releases once done with it. It
	// blocks while it cannot take it, and returns false when ctx, the
	// Puller's, ends first: the Puller then releases them.
	Deliver func(ctx context.Context, frames [][]byte, peer string, charged int64) bool
	// TooLarge reports a message over Limit; its connection is then
	// closed.
	TooLarge func(peer string, err error)
	// Reconnected, when set, is called each time a dialling Puller reaches
	// the ventilator again after losing it.
	Reconnected func()
}

// Puller is the PULL side of a queue: it binds, or dials a ventilator, and
// reads the messages of every connection.
type Puller struct {
	cfg PullConfig
	ctx context.Context
	end context.CancelFunc
	srv *Server // when bound
	wg  sync.WaitGroup
	// conns are the dialled connections; a bound Puller's are srv's.
	conns ConnSet
}

// StartPuller binds the endpoint, or starts dialling the ventilator.
func StartPuller(cfg PullConfig) (*Puller, error) {
	ctx, end := context.WithCancel(context.Background())
	p := &Puller{cfg: cfg, ctx: ctx, end: end}
	if cfg.Dial {
		p.wg.Go(p.dialLoop)
		return p, nil
	}
	srv, err := Listen(cfg.Network, cfg.Address, ServerConfig{
		Type: zmq4.Pull, MaxConnections: cfg.MaxConnections, Hint: cfg.Hint, Clock: cfg.Clock, Log: cfg.Log,
	})
	if err != nil {
		end()
		return nil, err
	}
	p.srv = srv
	srv.Serve(p.read)
	return p, nil
}

// dialLoop keeps one connection to the ventilator, redialling with backoff
// when it cannot be reached or is lost.
func (p *Puller) dialLoop() {
	var backoff Backoff
	failing, connected := false, false
	for p.ctx.Err() == nil {
		var d net.Dialer
		raw, err := d.DialContext(p.ctx, p.cfg.Network, p.cfg.Address)
		var c *Conn
		if err == nil {
			if p.conns.Add(raw) != nil {
				raw.Close()
				return
			}
			c, err = Handshake(raw, zmq4.Pull, false, HandshakeTimeout)
			if err != nil {
				p.conns.Remove(raw)
			}
		}
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			if !failing {
				p.cfg.Log.Warn("zeromq: cannot reach the ventilator; retrying until it answers", "endpoint", p.cfg.Endpoint, "err", err)
			}
			failing = true
			if backoff.Wait(p.ctx, p.cfg.Clock) != nil {
				return
			}
			continue
		}
		p.conns.Ready(raw)
		p.cfg.Log.Info("zeromq: connected to the ventilator", "endpoint", p.cfg.Endpoint)
		if connected && p.cfg.Reconnected != nil {
			p.cfg.Reconnected()
		}
		failing, connected = false, true
		backoff.Reset()
		p.read(c)
		p.conns.Remove(raw)
		if p.ctx.Err() == nil {
			p.cfg.Log.Warn("zeromq: lost the connection to the ventilator; redialling", "endpoint", p.cfg.Endpoint)
		}
	}
}

// read delivers the messages of c until c is lost or the Puller stops.
func (p *Puller) read(c *Conn) {
	for {
		frames, charged, err := c.ReadMessageWithin(p.ctx, p.cfg.Budget, p.cfg.Limit, p.cfg.Lead, p.cfg.Keep)
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				p.cfg.TooLarge(c.Peer(), err)
			} else if p.ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.cfg.Log.Warn("zeromq: connection lost", "peer", c.Peer(), "err", err)
			}
			return
		}
		if !p.cfg.Deliver(p.ctx, frames, c.Peer(), charged) {
			p.Release(charged)
			return
		}
	}
}

// Release gives back the bytes a delivered message held of the Budget.
func (p *Puller) Release(charged int64) {
	if p.cfg.Budget != nil {
		p.cfg.Budget.Release(charged)
	}
}

// Connections returns how many peers are connected (handshake done).
func (p *Puller) Connections() int {
	if p.srv != nil {
		return p.srv.Connections()
	}
	return p.conns.ReadyCount()
}

// Addr is the bound address, or nil for a dialing Puller.
func (p *Puller) Addr() net.Addr {
	if p.srv == nil {
		return nil
	}
	return p.srv.Addr()
}

// Stop stops receiving: it closes the listener and every connection, and
// returns once no goroutine of the Puller runs, so nothing more is
// delivered.
func (p *Puller) Stop() {
	p.end()
	p.conns.Close()
	if p.srv != nil {
		p.srv.Close()
	}
	p.wg.Wait()
}
