package zmtp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/internal/wait"
)

// HandshakeTimeout bounds the ZMTP handshake with a peer.
const HandshakeTimeout = 10 * time.Second

// ServerConfig configures a Server.
type ServerConfig struct {
	// Type is the socket type the Server speaks as (zmq4.Pull, zmq4.Push).
	Type zmq4.SocketType
	// MaxConnections bounds the connections at once (0: no bound). A peer
	// over it is hung up on, with a warning at most once a minute.
	MaxConnections int
	// Hint ends the warning about a refused connection: how to raise the
	// bound.
	Hint string
	// Clock paces the retries of a failed accept and the warnings.
	Clock clock.Clock
	// Log is where the Server logs, with the attributes that name the
	// socket.
	Log *slog.Logger
}

// Server is a bound endpoint: it accepts peers, handshakes with each, and
// serves it in a goroutine of its own until the serving function returns or
// the Server closes.
type Server struct {
	cfg     ServerConfig
	ln      net.Listener
	ctx     context.Context
	end     context.CancelFunc
	conns   ConnSet
	wg      sync.WaitGroup
	failed  noisy // handshakes that failed
	refused noisy // connections over the limit
}

// Listen binds network/address ("tcp" or "unix").
func Listen(network, address string, cfg ServerConfig) (*Server, error) {
	ctx, end := context.WithCancel(context.Background())
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, network, address)
	if err != nil {
		end()
		return nil, err
	}
	s := &Server{
		cfg: cfg, ln: ln, ctx: ctx, end: end,
		conns:   ConnSet{Limit: cfg.MaxConnections},
		failed:  noisy{key: "failed_handshakes", clock: cfg.Clock},
		refused: noisy{key: "refused_connections", clock: cfg.Clock},
	}
	return s, nil
}

// Addr returns the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve starts accepting peers. serve is called with each peer once its
// handshake is done, in a goroutine of the Server; the connection is closed
// when serve returns.
func (s *Server) Serve(serve func(*Conn)) {
	s.wg.Go(func() { s.acceptLoop(serve) })
}

// acceptLoop accepts the connections until the Server closes. A failed
// accept is logged and tried again after a pause on the clock.
func (s *Server) acceptLoop(serve func(*Conn)) {
	for {
		raw, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.cfg.Log.Warn("zeromq: accept failed", "err", err)
			if wait.Sleep(s.ctx, s.cfg.Clock, FirstRedial) != nil {
				return
			}
			continue
		}
		switch err := s.conns.Add(raw); {
		case errors.Is(err, errSetClosed):
			raw.Close()
			return
		case err != nil:
			s.refused.log(s.cfg.Log, "zeromq: connection refused: the socket has its maximum of connections",
				"peer", raw.RemoteAddr().String(), "max_connections", s.cfg.MaxConnections, "hint", s.cfg.Hint)
			raw.Close()
			continue
		}
		s.wg.Go(func() {
			defer s.conns.Remove(raw)
			c, err := Handshake(raw, s.cfg.Type, true, HandshakeTimeout)
			if err != nil {
				if s.ctx.Err() == nil {
					s.failed.log(s.cfg.Log, "zeromq: a peer failed the ZMTP handshake", "peer", raw.RemoteAddr().String(), "err", Cause(err))
				}
				return
			}
			s.conns.Ready(raw)
			serve(c)
		})
	}
}

// Connections returns how many peers completed the handshake and are
// still connected.
func (s *Server) Connections() int { return s.conns.ReadyCount() }

// FailedHandshakes returns how many peers failed the handshake.
func (s *Server) FailedHandshakes() int64 { return s.failed.total() }

// Close stops accepting, closes every connection, and returns once no
// goroutine of the Server runs (serving functions must return when their
// connection closes).
func (s *Server) Close() {
	s.end()
	s.conns.Close()
	s.ln.Close()
	s.wg.Wait()
}
