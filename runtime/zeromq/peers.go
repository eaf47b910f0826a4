package zeromq

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/wait"
)

// Backoff between attempts to reach a peer.
const (
	firstRedial = 100 * time.Millisecond
	maxRedial   = 2 * time.Second
)

// connSet is the connections of a socket: closing the socket closes them
// all. It knows which have completed the ZMTP handshake.
type connSet struct {
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool // → handshake done
}

// add tracks raw; it reports false, and tracks nothing, once the set is
// closed.
func (s *connSet) add(raw net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]bool{}
	}
	s.conns[raw] = false
	return true
}

// ready marks raw's handshake as done.
func (s *connSet) ready(raw net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[raw]; ok {
		s.conns[raw] = true
	}
}

// remove stops tracking raw and closes it.
func (s *connSet) remove(raw net.Conn) {
	s.mu.Lock()
	delete(s.conns, raw)
	s.mu.Unlock()
	raw.Close()
}

// readyCount returns how many connections completed the handshake.
func (s *connSet) readyCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ready := range s.conns {
		if ready {
			n++
		}
	}
	return n
}

// close closes every connection; add refuses new ones from now on.
func (s *connSet) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for raw := range s.conns {
		raw.Close()
	}
}

// acceptLoop accepts the connections of ln until ln is closed or ctx ends.
// It adds each to conns and serves it in a goroutine of wg, removing it
// when serve returns. A failed accept is logged as msg and tried again
// after a pause on clock.
func acceptLoop(ctx context.Context, ln net.Listener, conns *connSet, wg *sync.WaitGroup, clock runtime.Clock, log *slog.Logger, msg string, serve func(raw net.Conn)) {
	for {
		raw, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			log.Warn(msg, "err", err)
			if wait.Sleep(ctx, clock, firstRedial) != nil {
				return
			}
			continue
		}
		if !conns.add(raw) {
			raw.Close()
			return
		}
		wg.Go(func() {
			defer conns.remove(raw)
			serve(raw)
		})
	}
}

// watchGone watches c, a connection to a PULL peer. Such a peer sends
// nothing after the handshake, so a read returns only when the connection
// is lost: the returned channel is closed then. The read runs in a
// goroutine of wg; closing c ends it.
func watchGone(wg *sync.WaitGroup, c *conn) <-chan struct{} {
	gone := make(chan struct{})
	wg.Go(func() {
		defer close(gone)
		for {
			if _, err := c.readMessage(maxHandshakeFrame); err != nil {
				return
			}
		}
	})
	return gone
}

// redialBackoff spaces out the attempts to reach a peer: firstRedial after
// the first failure, doubling up to maxRedial. The zero value is ready.
type redialBackoff struct {
	next time.Duration
}

// wait waits out the next pause on clock, or until ctx ends (then it
// returns ctx.Err()).
func (b *redialBackoff) wait(ctx context.Context, clock runtime.Clock) error {
	d := max(b.next, firstRedial)
	b.next = min(2*d, maxRedial)
	return wait.Sleep(ctx, clock, d)
}

// reset makes the next pause firstRedial again, after a success.
func (b *redialBackoff) reset() { b.next = 0 }
