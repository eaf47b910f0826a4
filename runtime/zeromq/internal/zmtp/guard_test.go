package zmtp

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// greeting is a ZMTP 3.0 greeting for the NULL mechanism.
func greeting() []byte {
	g := make([]byte, greetingSize)
	g[0], g[9], g[10], g[11] = 0xff, 0x7f, 3, 0
	copy(g[12:], "NULL")
	return g
}

// follow feeds b to a new guard, whole and then one byte at a time, and
// fails t unless both give the same result, which it returns.
func follow(t *testing.T, b []byte) error {
	t.Helper()
	whole := (&handshakeGuard{}).follow(b)
	var g handshakeGuard
	var bytewise error
	for i := range b {
		if bytewise = g.follow(b[i : i+1]); bytewise != nil {
			break
		}
	}
	if (whole == nil) != (bytewise == nil) || (whole != nil && whole.Error() != bytewise.Error()) {
		t.Fatalf("whole: %v; byte by byte: %v", whole, bytewise)
	}
	return whole
}

func TestGuardRefusesAHandshakeFrameOverItsLimit(t *testing.T) {
	testkit.NoLeaks(t)
	ok := append(greeting(), flagCommand|flagLong)
	ok = binary.BigEndian.AppendUint64(ok, MaxHandshakeFrame)
	if err := follow(t, ok); err != nil {
		t.Fatalf("a frame of the limit: %v", err)
	}
	huge := append(greeting(), flagCommand|flagLong)
	huge = binary.BigEndian.AppendUint64(huge, 1<<50)
	if err := follow(t, huge); !errors.Is(err, errHandshakeFrame) {
		t.Fatalf("a frame of 2^50 bytes: %v, want errHandshakeFrame", err)
	}
	// Short frames, then a long one over the limit.
	frames := append(greeting(), flagCommand, 3, 'a', 'b', 'c', 0, 0, flagLong)
	frames = binary.BigEndian.AppendUint64(frames, MaxHandshakeFrame+1)
	if err := follow(t, frames); !errors.Is(err, errHandshakeFrame) {
		t.Fatalf("after short frames: %v, want errHandshakeFrame", err)
	}
}

func TestGuardRefusesWhatIsNotAGreeting(t *testing.T) {
	testkit.NoLeaks(t)
	var nz *notZMTPError
	if err := follow(t, []byte("GET / HTTP/1.1\r\n")); !errors.As(err, &nz) || nz.at != 0 {
		t.Fatalf("an HTTP request: %v, want byte 0 refused", err)
	}
	bad := greeting()
	bad[9] = 0x00
	if err := follow(t, bad[:10]); !errors.As(err, &nz) || nz.at != 9 {
		t.Fatalf("a signature without its 0x7f: %v, want byte 9 refused", err)
	}
	if err := follow(t, greeting()[:5]); err != nil {
		t.Fatalf("the start of a greeting: %v", err)
	}
}

// TestGuardPassesARealHandshake: zmq4's handshake works through the guard,
// both ways.
func TestGuardPassesARealHandshake(t *testing.T) {
	testkit.NoLeaks(t)
	a, b := tcpPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := zmq4.Open(b, null.Security(), zmq4.Push, nil, false, nil)
		done <- err
	}()
	if _, err := zmq4.Open(&handshakeGuard{Conn: a}, null.Security(), zmq4.Pull, nil, true, nil); err != nil {
		t.Fatalf("through the guard: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the peer: %v", err)
	}
}
