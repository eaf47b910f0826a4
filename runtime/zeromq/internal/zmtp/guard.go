package zmtp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// handshakeGuard follows the bytes a peer sends during the handshake (the
// greeting, then frames) and fails the read that would hand zmq4 something
// it should not see: a first byte or a tenth byte that is not the ZMTP
// signature's (0xFF, 0x7F), so that a peer that speaks another protocol is
// refused at once rather than when the handshake times out; or the size of
// a frame larger than MaxHandshakeFrame, before zmq4 allocates it.
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

// Where the ZMTP signature's fixed bytes are in the greeting, and what
// they are.
const (
	signatureStart, signatureStartByte = 0, 0xff
	signatureEnd, signatureEndByte     = 9, 0x7f
)

var errHandshakeFrame = errors.New("a handshake frame exceeds the size limit")

// notZMTPError is a greeting whose signature byte at is got, not want.
type notZMTPError struct {
	at        int
	got, want byte
}

func (e *notZMTPError) Error() string {
	return fmt.Sprintf("not a ZMTP greeting: byte %d is %#02x, want %#02x", e.at, e.got, e.want)
}

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

// follow takes the next bytes the peer sent, and fails on the first one
// that breaks the guard's rules.
func (g *handshakeGuard) follow(b []byte) error {
	for len(b) > 0 {
		if g.seen < greetingSize {
			if err := checkSignature(g.seen, b); err != nil {
				return err
			}
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
				if g.left > MaxHandshakeFrame {
					return errHandshakeFrame
				}
				g.state = guardBody
			}
		case guardBody:
			k := min(uint64(len(b)), g.left)
			g.left -= k
			b = b[k:]
		}
		if g.state == guardBody && g.left == 0 {
			g.state = guardFlags
		}
	}
	return nil
}

// checkSignature checks the greeting bytes b, which start at offset at of
// the greeting, against the signature's fixed bytes.
func checkSignature(at int, b []byte) error {
	for _, fixed := range [...]struct {
		at   int
		want byte
	}{{signatureStart, signatureStartByte}, {signatureEnd, signatureEndByte}} {
		if i := fixed.at - at; i >= 0 && i < len(b) && b[i] != fixed.want {
			return &notZMTPError{at: fixed.at, got: b[i], want: fixed.want}
		}
	}
	return nil
}
