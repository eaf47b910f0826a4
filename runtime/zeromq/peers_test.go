package zeromq

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// peerPatience bounds each wait of these tests for a goroutine.
const peerPatience = 30 * time.Second

func TestConnSetTracksAndClosesConnections(t *testing.T) {
	var s connSet
	a, aPeer := net.Pipe()
	b, bPeer := net.Pipe()
	defer aPeer.Close()
	defer bPeer.Close()
	if !s.add(a) || !s.add(b) {
		t.Fatal("add refused a connection to an open set")
	}
	s.ready(b)
	if n := s.readyCount(); n != 1 {
		t.Errorf("readyCount = %d, want 1 (only b finished its handshake)", n)
	}
	s.remove(b)
	if n := s.readyCount(); n != 0 {
		t.Errorf("readyCount after remove = %d, want 0", n)
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write on a removed connection: %v, want it closed", err)
	}
	s.close()
	if _, err := a.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write on a connection of a closed set: %v, want it closed", err)
	}
	c, cPeer := net.Pipe()
	defer c.Close()
	defer cPeer.Close()
	if s.add(c) {
		t.Error("a closed set took a new connection")
	}
}

func TestAcceptLoopServesEachConnectionAndStopsWithItsListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns connSet
	var wg sync.WaitGroup
	served := make(chan net.Conn, 1)
	wg.Go(func() {
		acceptLoop(context.Background(), ln, &conns, &wg, runtime.SystemClock{}, slog.New(slog.DiscardHandler), "accept failed", func(raw net.Conn) {
			served <- raw
			_, _ = raw.Read(make([]byte, 1)) // until the connection closes
		})
	})
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	select {
	case <-served:
	case <-time.After(peerPatience):
		t.Fatal("the accepted connection was not served")
	}
	ln.Close()
	conns.close()
	wg.Wait() // the loop and the serving goroutine return
	if _, err := dialed.Read(make([]byte, 1)); err == nil {
		t.Error("the served connection is still open after the set closed")
	}
}

func TestWatchGoneClosesWhenThePeerLeaves(t *testing.T) {
	raw, peer := net.Pipe()
	c := &conn{raw: raw, r: bufio.NewReader(raw), peer: "pipe"}
	var wg sync.WaitGroup
	gone := watchGone(&wg, c)
	select {
	case <-gone:
		t.Fatal("gone before the peer left")
	default:
	}
	peer.Close()
	select {
	case <-gone:
	case <-time.After(peerPatience):
		t.Fatal("gone stayed open after the peer left")
	}
	c.Close()
	wg.Wait()
}

func TestRedialBackoffDoublesUpToItsMaximumOnTheClock(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	var b redialBackoff
	pause := func() time.Duration {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- b.wait(context.Background(), clock) }()
		testkit.Eventually(t, "wait to set a timer", func() bool { return clock.Pending() == 1 })
		d := clock.PendingDelays()[0]
		clock.Advance(d)
		if err := <-done; err != nil {
			t.Fatalf("wait = %v", err)
		}
		return d
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, maxRedial, maxRedial}
	for i, w := range want {
		if got := pause(); got != w {
			t.Errorf("pause %d = %v, want %v", i+1, got, w)
		}
	}
	b.reset()
	if got := pause(); got != firstRedial {
		t.Errorf("pause after reset = %v, want %v", got, firstRedial)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.wait(ctx, clock); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with an ended context = %v, want context.Canceled", err)
	}
}
