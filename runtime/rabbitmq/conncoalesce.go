package rabbitmq

import (
	"net"
	"sync"
	"time"
)

// Bounds of a coalescingConn.
const (
	// gatherAfter is how soon after the socket's last write a write is
	// gathered with the ones that follow it: a write that comes later
	// comes alone, and goes straight to the socket.
	gatherAfter = 100 * time.Microsecond
	// maxPendingWrite is how many bytes a coalescingConn holds for its
	// socket at most: a write that would hold more waits until the socket
	// took what is there (the broker's TCP flow control reaches the
	// writer, as it does without a coalescingConn, this much later).
	maxPendingWrite = 256 << 10
	// directWrite is the size from which a write that finds the socket
	// idle goes straight to it: so large a write gains nothing from
	// company, and is not copied.
	directWrite = 64 << 10
	// keptBuffer is the largest buffer kept for the next writes once
	// nothing waits: the two buffers that take turns are reused, unless a
	// burst made them larger.
	keptBuffer = 16 << 10
	// closeFlushTimeout is how long Close gives the socket to take what
	// is pending (a connection.close-ok amqp091 wrote just before it
	// closes the connection) before it closes it all the same.
	closeFlushTimeout = 250 * time.Millisecond
)

// coalescingConn is the socket under an AMQP connection: a net.Conn
// whose writes, when many come at once, reach the socket together.
//
// amqp091 writes each frame set (a publish, an ack) with a write of its
// own, one at a time under the connection's lock. With many goroutines
// publishing on one connection (a Requester's callers, a subscription's
// replies), each message would cost a system call here and a read on the
// broker's side. A write that finds the socket idle since gatherAfter or
// longer goes straight to it, as it would without a coalescingConn (a
// lone request waits for nothing). Any other write is copied, and
// returns: one goroutine, started when bytes wait and none runs, writes
// everything that waits in one write, in order, and ends once nothing
// does. The writes that come while one is on the wire go out together
// after it.
//
// An error of a write to the socket is kept: the write that comes next
// returns it (amqp091 then shuts the connection down), and the socket is
// closed, so that the connection's reader learns it at once too.
type coalescingConn struct {
	net.Conn

	mu sync.Mutex
	// room is signalled when the socket took the bytes that waited, or
	// its writer stopped.
	room      sync.Cond
	pending   []byte
	spare     []byte    // the buffer last written, reused as the next pending
	flushing  bool      // the socket is being written to, or will be
	idleSince time.Time // when the socket's last write ended
	err       error     // a write to the socket failed, or Close was called
}

func newCoalescingConn(c net.Conn) *coalescingConn {
	cc := &coalescingConn{Conn: c}
	cc.room.L = &cc.mu
	return cc
}

// Write writes p to the socket, at once when the socket is idle and p
// comes alone or is large, else after what waits already: then it copies
// p and returns, and waits only while too much waits. It returns the
// error a write to the socket failed with before, if one did.
func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	for c.err == nil && len(c.pending) > 0 && len(c.pending)+len(p) > maxPendingWrite {
		c.room.Wait()
	}
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, err
	}
	if !c.flushing && (len(p) >= directWrite || time.Since(c.idleSince) >= gatherAfter) {
		return c.writeDirect(p)
	}
	c.pending = append(c.pending, p...)
	start := !c.flushing
	c.flushing = true
	c.mu.Unlock()
	if start {
		go c.flush()
	}
	return len(p), nil
}

// writeDirect writes p to the idle socket, with no copy. c.mu is held,
// and released. No other write is under way (amqp091 writes one at a
// time); one that comes meanwhile waits for flush.
func (c *coalescingConn) writeDirect(p []byte) (int, error) {
	c.flushing = true
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wrote(err)
	if len(c.pending) > 0 && c.err == nil {
		go c.flush()
		return n, err
	}
	c.idle()
	return n, err
}

// flush writes what waits, until nothing does or a write failed.
func (c *coalescingConn) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.pending) > 0 && c.err == nil {
		buf := c.pending
		c.pending = c.spare[:0]
		c.mu.Unlock()
		_, err := c.Conn.Write(buf)
		c.mu.Lock()
		c.spare = buf[:0]
		c.wrote(err)
		c.room.Broadcast()
	}
	if cap(c.pending) > keptBuffer {
		c.pending = nil // a burst's: not kept while idle
	}
	if cap(c.spare) > keptBuffer {
		c.spare = nil
	}
	c.idle()
}

// idle marks the socket idle. c.mu is held.
func (c *coalescingConn) idle() {
	c.flushing = false
	c.idleSince = time.Now()
	c.room.Broadcast()
}

// wrote keeps the error of a write to the socket, and closes the socket
// on one: the connection is broken. c.mu is held.
func (c *coalescingConn) wrote(err error) {
	if err != nil && c.err == nil {
		c.err = err
		_ = c.Conn.Close()
	}
}

// Close closes the socket once what waits was written, or after
// closeFlushTimeout. Writes fail from now on.
func (c *coalescingConn) Close() error {
	c.mu.Lock()
	if c.flushing {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(closeFlushTimeout))
		for c.flushing {
			c.room.Wait()
		}
	}
	if c.err == nil {
		c.err = net.ErrClosed
	}
	c.room.Broadcast()
	c.mu.Unlock()
	return c.Conn.Close()
}
