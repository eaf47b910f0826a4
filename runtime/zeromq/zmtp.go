package zeromq

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// ZMTP 3.0 frame flags.
const (
	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04
)

const (
	// greetingSize is the size of the ZMTP greeting.
	greetingSize = 64
	// maxHandshakeFrame bounds the frames a peer may send during the
	// handshake (its READY command with the socket metadata).
	maxHandshakeFrame = 64 << 10
	// maxKeptFrames is how many frames of one message are kept; the
	// rest are read and discarded, which makes the message malformed.
	maxKeptFrames = FrameCount + 1
)

// errMessageTooLarge is returned by readMessage for a message larger than
// its limit. The connection is then closed: its stream cannot be resumed
// without reading the message.
var errMessageTooLarge = errors.New("zeromq: message exceeds the size limit")

// conn is one ZMTP connection with NULL security. zmq4 performs the
// handshake; frames are read and written here, so that a message size limit
// holds before memory is allocated and a message goes to exactly this peer.
type conn struct {
	raw  net.Conn
	r    *bufio.Reader
	peer string

	writeMu sync.Mutex
}

// handshake performs the ZMTP greeting and NULL handshake on raw as a socket
// of type typ, within timeout. The frames the peer sends during the
// handshake are bounded, so a hostile peer cannot make zmq4 allocate an
// arbitrary amount of memory.
func handshake(raw net.Conn, typ zmq4.SocketType, server bool, timeout time.Duration) (*conn, error) {
	if err := raw.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("zeromq: handshake with %s: %w", raw.RemoteAddr(), err)
	}
	if _, err := zmq4.Open(&handshakeGuard{Conn: raw}, null.Security(), typ, nil, server, nil); err != nil {
		return nil, fmt.Errorf("zeromq: handshake with %s: %w", raw.RemoteAddr(), err)
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("zeromq: handshake with %s: %w", raw.RemoteAddr(), err)
	}
	return &conn{raw: raw, r: bufio.NewReader(raw), peer: raw.RemoteAddr().String()}, nil
}

// Close closes the connection; a blocked read or write returns.
func (c *conn) Close() error { return c.raw.Close() }

// readMessage reads the next message and returns its frames. Commands are
// skipped. At most maxKeptFrames frames are kept (a longer message is read
// whole, so the stream stays in step). A message whose frames add up to more
// than limit bytes (limit > 0) fails with errMessageTooLarge before its
// bodies are read into memory.
func (c *conn) readMessage(limit int64) ([][]byte, error) {
	var (
		frames [][]byte
		total  int64
		hdr    [8]byte
	)
	for {
		flags, err := c.r.ReadByte()
		if err != nil {
			return nil, err
		}
		var size uint64
		if flags&flagLong != 0 {
			if _, err := io.ReadFull(c.r, hdr[:8]); err != nil {
				return nil, err
			}
			size = binary.BigEndian.Uint64(hdr[:8])
		} else {
			b, err := c.r.ReadByte()
			if err != nil {
				return nil, err
			}
			size = uint64(b)
		}
		if flags&flagCommand != 0 {
			// A command between messages (ZMTP 3.1 heartbeats, which
			// peers do not send to our 3.0 greeting): skip it.
			if size > maxHandshakeFrame {
				return nil, fmt.Errorf("zeromq: a command of %d bytes from %s: %w", size, c.peer, errMessageTooLarge)
			}
			if _, err := c.r.Discard(int(size)); err != nil {
				return nil, err
			}
			continue
		}
		if limit > 0 && (size > uint64(limit) || total+int64(size) > limit) {
			return nil, fmt.Errorf("zeromq: a message of more than %d bytes from %s: %w", limit, c.peer, errMessageTooLarge)
		}
		total += int64(size)
		if len(frames) < maxKeptFrames {
			body := make([]byte, size)
			if _, err := io.ReadFull(c.r, body); err != nil {
				return nil, err
			}
			frames = append(frames, body)
		} else {
			if _, err := io.CopyN(io.Discard, c.r, int64(size)); err != nil {
				return nil, err
			}
			frames = append(frames, nil)
		}
		if flags&flagMore == 0 {
			return frames, nil
		}
	}
}

// writeMessage writes frames as one message. It returns when the message is
// in the kernel's send buffer, or fails when ctx ends first; the connection
// must then be closed, since part of a message may have been written.
func (c *conn) writeMessage(ctx context.Context, frames [][]byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.raw.SetWriteDeadline(time.Unix(1, 0))
		close(cut)
	})
	_, err := c.raw.Write(encodeFrames(frames))
	if !stop() {
		// ctx ended during the write; its deadline may have cut it.
		<-cut
		if err == nil {
			_ = c.raw.SetWriteDeadline(time.Time{})
		} else {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
	return err
}

// encodeFrames returns the wire form of a message made of frames.
func encodeFrames(frames [][]byte) []byte {
	n := 0
	for _, f := range frames {
		n += 9 + len(f)
	}
	buf := make([]byte, 0, n)
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags |= flagMore
		}
		if len(f) > 255 {
			buf = append(buf, flags|flagLong)
			buf = binary.BigEndian.AppendUint64(buf, uint64(len(f)))
		} else {
			buf = append(buf, flags, byte(len(f)))
		}
		buf = append(buf, f...)
	}
	return buf
}

// handshakeGuard follows the bytes a peer sends during the handshake (the
// greeting, then frames) and fails a read that would hand zmq4 the size of
// a frame larger than maxHandshakeFrame, before zmq4 allocates it.
type handshakeGuard struct {
	net.Conn
	seen  int    // bytes of the greeting seen so far
	state int    // what the next byte is
	size  []byte // the size bytes of the current frame
	left  uint64 // body bytes of the current frame not yet seen
}

const (
	guardFlags = iota
	guardShortSize
	guardLongSize
	guardBody
)

var errHandshakeFrame = errors.New("zeromq: a handshake frame exceeds the size limit")

func (g *handshakeGuard) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if n == 0 {
		return n, err
	}
	if gerr := g.follow(p[:n]); gerr != nil {
		return 0, gerr
	}
	return n, err
}

func (g *handshakeGuard) follow(b []byte) error {
	for len(b) > 0 {
		if g.seen < greetingSize {
			k := min(greetingSize-g.seen, len(b))
			g.seen += k
			b = b[k:]
			continue
		}
		switch g.state {
		case guardFlags:
			if b[0]&flagLong != 0 {
				g.state = guardLongSize
			} else {
				g.state = guardShortSize
			}
			g.size = g.size[:0]
			b = b[1:]
		case guardShortSize:
			g.left = uint64(b[0])
			b = b[1:]
			g.state = guardBody
		case guardLongSize:
			g.size = append(g.size, b[0])
			b = b[1:]
			if len(g.size) == 8 {
				g.left = binary.BigEndian.Uint64(g.size)
				if g.left > maxHandshakeFrame {
					return errHandshakeFrame
				}
				g.state = guardBody
			}
		case guardBody:
			k := uint64(len(b))
			if k > g.left {
				k = g.left
			}
			g.left -= k
			b = b[k:]
		}
		if g.state == guardBody && g.left == 0 {
			g.state = guardFlags
		}
	}
	return nil
}
