package zmtp

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestConnSetTracksAndClosesConnections(t *testing.T) {
	testkit.NoLeaks(t)
	var s ConnSet
	a, aPeer := net.Pipe()
	b, bPeer := net.Pipe()
	defer aPeer.Close()
	defer bPeer.Close()
	if s.Add(a) != nil || s.Add(b) != nil {
		t.Fatal("Add refused a connection to an open set")
	}
	s.Ready(b)
	if n := s.ReadyCount(); n != 1 {
		t.Errorf("ReadyCount = %d, want 1 (only b finished its handshake)", n)
	}
	s.Remove(b)
	if n := s.ReadyCount(); n != 0 {
		t.Errorf("ReadyCount after Remove = %d, want 0", n)
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write on a removed connection: %v, want it closed", err)
	}
	s.Close()
	if _, err := a.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("write on a connection of a closed set: %v, want it closed", err)
	}
	c, cPeer := net.Pipe()
	defer c.Close()
	defer cPeer.Close()
	if err := s.Add(c); !errors.Is(err, errSetClosed) {
		t.Errorf("Add to a closed set = %v, want errSetClosed", err)
	}
}

func TestConnSetHoldsAtMostItsLimit(t *testing.T) {
	testkit.NoLeaks(t)
	s := ConnSet{Limit: 2}
	var conns []net.Conn
	for range 3 {
		c, peer := net.Pipe()
		defer peer.Close()
		conns = append(conns, c)
	}
	if s.Add(conns[0]) != nil || s.Add(conns[1]) != nil {
		t.Fatal("Add refused a connection under the limit")
	}
	if err := s.Add(conns[2]); !errors.Is(err, errSetFull) {
		t.Fatalf("Add over the limit = %v, want errSetFull", err)
	}
	s.Remove(conns[0])
	if err := s.Add(conns[2]); err != nil {
		t.Fatalf("Add after a Remove = %v", err)
	}
	s.Close()
}

func TestWatchGoneClosesWhenThePeerLeaves(t *testing.T) {
	testkit.NoLeaks(t)
	raw, peer := net.Pipe()
	c := NewConn(raw)
	var wg sync.WaitGroup
	gone := WatchGone(&wg, c)
	select {
	case <-gone:
		t.Fatal("gone before the peer left")
	default:
	}
	peer.Close()
	select {
	case <-gone:
	case <-time.After(patience):
		t.Fatal("gone stayed open after the peer left")
	}
	c.Close()
	wg.Wait()
}

func TestBackoffDoublesUpToItsMaximumOnTheClock(t *testing.T) {
	testkit.NoLeaks(t)
	clock := streamtest.NewClock(time.Time{})
	var b Backoff
	pause := func() time.Duration {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- b.Wait(context.Background(), clock) }()
		testkit.Eventually(t, "Wait sets a timer", func() bool { return clock.Pending() == 1 })
		d := clock.PendingDelays()[0]
		clock.Advance(d)
		if err := <-done; err != nil {
			t.Fatalf("Wait = %v", err)
		}
		return d
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, MaxRedial, MaxRedial}
	for i, w := range want {
		if got := pause(); got != w {
			t.Errorf("pause %d = %v, want %v", i+1, got, w)
		}
	}
	b.Reset()
	if got := pause(); got != FirstRedial {
		t.Errorf("pause after Reset = %v, want %v", got, FirstRedial)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx, clock); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with an ended context = %v, want context.Canceled", err)
	}
}
