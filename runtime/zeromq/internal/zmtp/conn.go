package zmtp

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
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
	// MaxHandshakeFrame bounds the frames a peer may send during the
	// handshake (its READY command with the socket metadata), and the
	// commands it may send later.
	MaxHandshakeFrame = 64 << 10
	// firstChunk is the most a frame's buffer holds before the frame's
	// bytes arrive; it then doubles as they do, up to the frame's size, so
	// a peer that announces a large frame and sends little costs little.
	firstChunk = 64 << 10
)

// ErrTooLarge is wrapped by ReadMessage's error for a message larger than
// its limit. The connection must then be closed: its stream cannot be
// resumed without reading the message.
var ErrTooLarge = errors.New("message exceeds the size limit")

// ErrLeadTooLarge is wrapped, with ErrTooLarge, by ReadMessageWithin's
// error for a message whose frames before the last exceed their bound.
var ErrLeadTooLarge = errors.New("the frames before the last exceed their bound")

// Conn is one ZMTP connection with NULL security, after the handshake.
type Conn struct {
	raw  net.Conn
	r    *bufio.Reader
	peer string

	writeMu sync.Mutex
}

// Handshake performs the ZMTP greeting and NULL handshake on raw as a socket
// of type typ, within timeout. The frames the peer sends during the
// handshake are bounded, so a hostile peer cannot make zmq4 allocate an
// arbitrary amount of memory, and a peer that does not open with a ZMTP
// greeting is refused at its first bytes.
func Handshake(raw net.Conn, typ zmq4.SocketType, server bool, timeout time.Duration) (*Conn, error) {
	if err := raw.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("handshake with %s: %w", raw.RemoteAddr(), err)
	}
	if _, err := zmq4.Open(&handshakeGuard{Conn: raw}, null.Security(), typ, nil, server, nil); err != nil {
		return nil, &HandshakeError{Peer: raw.RemoteAddr().String(), Err: err}
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("handshake with %s: %w", raw.RemoteAddr(), err)
	}
	return NewConn(raw), nil
}

// HandshakeError is a failed handshake. Its message is the cause, without
// the chain of zmq4's own context around it; Unwrap returns the whole.
type HandshakeError struct {
	Peer string
	Err  error
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("handshake with %s: %s", e.Peer, Cause(e.Err))
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// Cause is the innermost error of err's chain, in a few words, without the
// "zmq4: " prefix of zmq4's errors.
func Cause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	msg := err.Error()
	for {
		rest, ok := strings.CutPrefix(msg, "zmq4: ")
		if !ok {
			return msg
		}
		msg = rest
	}
}

// NewConn returns the connection of raw, whose handshake is done.
func NewConn(raw net.Conn) *Conn {
	return &Conn{raw: raw, r: bufio.NewReader(raw), peer: raw.RemoteAddr().String()}
}

// Peer returns the peer's address.
func (c *Conn) Peer() string { return c.peer }

// Close closes the connection; a blocked read or write returns.
func (c *Conn) Close() error { return c.raw.Close() }

// ReadMessage reads the next message and returns its frames. Commands are
// skipped. At most keep frames are kept; the bodies of the others are read
// and discarded (they are returned as nil), so the stream stays in step and
// the caller sees how many there were. A message whose frames add up to
// more than limit bytes fails with ErrTooLarge before its bodies are read:
// limit must be more than 0. A frame's buffer grows as its bytes arrive.
func (c *Conn) ReadMessage(limit int64, keep int) ([][]byte, error) {
	frames, _, err := c.ReadMessageWithin(context.Background(), nil, limit, 0, keep)
	return frames, err
}

// ReadMessageWithin is ReadMessage with the bytes of the frames it keeps
// taken from b (when not nil) before they are read, and returned as
// charged: the caller gives them back with b.Release once done with the
// message. While they do not fit, it waits until ctx ends, and reads
// nothing more from c meanwhile. It takes them at once when the whole
// message is already buffered, else when it reaches the last frame: the
// frames before it, kept while it waits, are bounded by lead bytes
// together (0: by limit alone), and a message over that fails with
// ErrTooLarge. So a connection waits only while it holds nothing of b.
func (c *Conn) ReadMessageWithin(ctx context.Context, b *Budget, limit, lead int64, keep int) ([][]byte, int64, error) {
	if c.r.Buffered() == 0 {
		// Wait for the next bytes: a message that comes alone, in one
		// segment, is then in the buffer whole.
		if _, err := c.r.Peek(1); err != nil {
			return nil, 0, err
		}
	}
	if frames, charged, ok, err := c.readBuffered(ctx, b, limit, lead, keep); ok || err != nil {
		return frames, charged, err
	}
	var (
		frames  = make([][]byte, 0, min(max(keep, 1), 8))
		total   int64
		leading int64 // bytes of the frames kept before the last
		charged int64
		hdr     [8]byte
	)
	fail := func(err error) ([][]byte, int64, error) {
		if b != nil {
			b.Release(charged)
		}
		return nil, 0, err
	}
	for {
		flags, err := c.r.ReadByte()
		if err != nil {
			return fail(err)
		}
		var size uint64
		if flags&flagLong != 0 {
			if _, err := io.ReadFull(c.r, hdr[:8]); err != nil {
				return fail(err)
			}
			size = binary.BigEndian.Uint64(hdr[:8])
		} else {
			short, err := c.r.ReadByte()
			if err != nil {
				return fail(err)
			}
			size = uint64(short)
		}
		if flags&flagCommand != 0 {
			// A command between messages (ZMTP 3.1 heartbeats, which
			// peers do not send to our 3.0 greeting): skip it.
			if size > MaxHandshakeFrame {
				return fail(fmt.Errorf("a command of %d bytes from %s: %w", size, c.peer, ErrTooLarge))
			}
			if _, err := c.r.Discard(int(size)); err != nil {
				return fail(err)
			}
			continue
		}
		if size > uint64(limit) || total+int64(size) > limit {
			return fail(fmt.Errorf("a message of more than %d bytes from %s: %w", limit, c.peer, ErrTooLarge))
		}
		total += int64(size)
		last, kept := flags&flagMore == 0, len(frames) < keep
		if kept && !last {
			if leading += int64(size); lead > 0 && leading > lead {
				return fail(fmt.Errorf("a message whose frames before the last are over %d bytes from %s: %w (%w)", lead, c.peer, ErrTooLarge, ErrLeadTooLarge))
			}
		}
		if last && b != nil {
			charged = leading
			if kept {
				charged += int64(size)
			}
			if err := b.Acquire(ctx, charged); err != nil {
				charged = 0
				return fail(err)
			}
		}
		if kept {
			body, err := readBody(c.r, size)
			if err != nil {
				return fail(err)
			}
			frames = append(frames, body)
		} else {
			if _, err := io.CopyN(io.Discard, c.r, int64(size)); err != nil {
				return fail(err)
			}
			frames = append(frames, nil)
		}
		if last {
			return frames, charged, nil
		}
	}
}

// readBuffered reads the next message when all of it is already in the
// read buffer, and is made of at most keep frames and no command, within
// limit: then its frames share one allocation, the size of the message,
// taken from b (when not nil) first. It returns false, having read
// nothing, otherwise, or with the error of b.Acquire.
func (c *Conn) readBuffered(ctx context.Context, b *Budget, limit, lead int64, keep int) ([][]byte, int64, bool, error) {
	buf, _ := c.r.Peek(c.r.Buffered())
	// First pass: the frames' sizes, and where the message ends.
	var (
		n, off, total, size int
		last                bool
	)
	for !last {
		if n == keep || off+2 > len(buf) {
			return nil, 0, false, nil
		}
		flags := buf[off]
		if flags&flagCommand != 0 {
			return nil, 0, false, nil
		}
		head := 2
		size = int(buf[off+1])
		if flags&flagLong != 0 {
			if off+9 > len(buf) {
				return nil, 0, false, nil
			}
			long := binary.BigEndian.Uint64(buf[off+1 : off+9])
			if long > uint64(len(buf)) {
				return nil, 0, false, nil
			}
			size, head = int(long), 9
		}
		off += head + size
		if off > len(buf) {
			return nil, 0, false, nil
		}
		total += size
		n++
		last = flags&flagMore == 0
	}
	if int64(total) > limit || lead > 0 && int64(total-size) > lead {
		return nil, 0, false, nil // the slow path reports it
	}
	if b != nil {
		if err := b.Acquire(ctx, int64(total)); err != nil {
			return nil, 0, false, err
		}
	}
	// Second pass: copy the bodies out.
	frames := make([][]byte, n)
	bodies := make([]byte, total)
	off = 0
	at := 0
	for i := range frames {
		size, head := int(buf[off+1]), 2
		if buf[off]&flagLong != 0 {
			size, head = int(binary.BigEndian.Uint64(buf[off+1:off+9])), 9
		}
		off += head
		frames[i] = bodies[at : at+size : at+size]
		copy(frames[i], buf[off:off+size])
		off += size
		at += size
	}
	_, _ = c.r.Discard(off) // buffered: cannot fail
	var charged int64
	if b != nil {
		charged = int64(total)
	}
	return frames, charged, true, nil
}

// readBody reads a frame body of size bytes. Its buffer starts at
// firstChunk at most and doubles as the bytes arrive, so it is never more
// than twice what was read, plus firstChunk.
func readBody(r io.Reader, size uint64) ([]byte, error) {
	if size > math.MaxInt {
		return nil, ErrTooLarge
	}
	n := int(size)
	buf := make([]byte, 0, min(n, firstChunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(len(buf), n-len(buf)))
		}
		end := min(cap(buf), n)
		k, err := io.ReadFull(r, buf[len(buf):end])
		buf = buf[:len(buf)+k]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// WriteMessage writes frames as one message. It returns when the message is
// in the kernel's send buffer, or fails when ctx ends first; the connection
// must then be closed, since part of a message may have been written.
func (c *Conn) WriteMessage(ctx context.Context, frames [][]byte) error {
	_, err := c.Write(ctx, Encode(frames))
	return err
}

// Write writes wire, the wire form of one or more whole messages (see
// AppendEncode), with one write to the connection, and returns how many of
// its bytes were written. It returns when they are in the kernel's send
// buffer, or fails when ctx ends first; the connection must then be
// closed, since part of a message may have been written.
func (c *Conn) Write(ctx context.Context, wire []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.raw.SetWriteDeadline(time.Unix(1, 0))
		close(cut)
	})
	n, err := c.raw.Write(wire)
	if !stop() {
		// ctx ended during the write; its deadline may have cut it.
		<-cut
		if err == nil {
			_ = c.raw.SetWriteDeadline(time.Time{})
		} else {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
	return n, err
}

// Encode returns the wire form of a message made of frames.
func Encode(frames [][]byte) []byte {
	n := 0
	for _, f := range frames {
		n += 9 + len(f)
	}
	return AppendEncode(make([]byte, 0, n), frames)
}

// AppendEncode appends the wire form of a message made of frames to buf.
func AppendEncode(buf []byte, frames [][]byte) []byte {
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

// WatchGone watches c, a connection to a PULL peer. Such a peer sends
// nothing after the handshake, so a read returns only when the connection
// is lost: the returned channel is closed then. The read runs in a
// goroutine of wg; closing c ends it.
func WatchGone(wg *sync.WaitGroup, c *Conn) <-chan struct{} {
	gone := make(chan struct{})
	wg.Go(func() {
		defer close(gone)
		for {
			if _, err := c.ReadMessage(MaxHandshakeFrame, 0); err != nil {
				return
			}
		}
	})
	return gone
}
