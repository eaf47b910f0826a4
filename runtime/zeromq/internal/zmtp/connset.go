package zmtp

import (
	"errors"
	"net"
	"sync"
)

// Errors ConnSet.Add returns.
var (
	errSetClosed = errors.New("the socket is closed")
	errSetFull   = errors.New("the connection limit is reached")
)

// ConnSet is the connections of a socket: closing the socket closes them
// all. It knows which have completed the ZMTP handshake, and holds at most
// Limit (no limit when 0). The zero value is ready.
type ConnSet struct {
	Limit int

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool // → handshake done
}

// Add tracks raw. It tracks nothing, and fails, once the set is closed or
// holds Limit connections.
func (s *ConnSet) Add(raw net.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errSetClosed
	case s.Limit > 0 && len(s.conns) >= s.Limit:
		return errSetFull
	}
	if s.conns == nil {
		s.conns = map[net.Conn]bool{}
	}
	s.conns[raw] = false
	return nil
}

// Ready marks raw's handshake as done.
func (s *ConnSet) Ready(raw net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[raw]; ok {
		s.conns[raw] = true
	}
}

// Remove stops tracking raw and closes it.
func (s *ConnSet) Remove(raw net.Conn) {
	s.mu.Lock()
	delete(s.conns, raw)
	s.mu.Unlock()
	raw.Close()
}

// ReadyCount returns how many connections completed the handshake.
func (s *ConnSet) ReadyCount() int {
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

// Close closes every connection; Add refuses new ones from now on.
func (s *ConnSet) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for raw := range s.conns {
		raw.Close()
	}
}
