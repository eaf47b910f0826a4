package zmtp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds each wait of these tests. It is generous: the machine is
// shared.
const patience = 30 * time.Second

// discard is a logger that drops everything.
var discard = slog.New(slog.DiscardHandler)

// peer is the other end of a connection in these tests: a raw socket that
// did the ZMTP handshake with zmq4, and reads and writes frames with a Conn.
type peer struct {
	*Conn
	raw net.Conn
}

// dialPeer connects to a as a socket of type typ and does the handshake.
func dialPeer(t *testing.T, a net.Addr, typ zmq4.SocketType) *peer {
	t.Helper()
	raw, err := net.Dial(a.Network(), a.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := zmq4.Open(raw, null.Security(), typ, nil, false, nil); err != nil {
		t.Fatalf("handshake with %s: %v", a, err)
	}
	return &peer{Conn: NewConn(raw), raw: raw}
}

// read reads the next message of p, failing the test when there is none.
func (p *peer) read(t *testing.T) [][]byte {
	t.Helper()
	_ = p.raw.SetReadDeadline(time.Now().Add(patience))
	frames, err := p.ReadMessage(1<<20, 8)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return frames
}

// background returns a context that ends with the test.
func background(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// newClock returns a fake clock for the tests.
func newClock() *streamtest.Clock {
	return streamtest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

// wrapf is fmt.Errorf, for tables of wrapped errors.
func wrapf(format string, err error) error { return fmt.Errorf(format, err) }

// tcpPair returns the two ends of a loopback TCP connection, closed with
// the test. (A net.Pipe does not buffer, and both sides of a handshake
// write before they read.)
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b
}
