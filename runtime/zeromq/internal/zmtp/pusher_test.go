package zmtp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// pusherTo returns a Pusher to a, closed with the test.
func pusherTo(t *testing.T, a net.Addr, log *streamtest.LogRecorder) *Pusher {
	t.Helper()
	l := discard
	if log != nil {
		l = log.Logger()
	}
	p := NewPusher("jobs", func() (string, string, error) { return a.Network(), a.String(), nil }, clock.System{}, l)
	t.Cleanup(func() { _ = p.Close(background(t)) })
	return p
}

func TestPusherWritesEachMessageBeforeSendReturns(t *testing.T) {
	testkit.NoLeaks(t)
	s := listen(t, ServerConfig{Type: zmq4.Pull})
	var read atomic.Int64
	s.Serve(func(c *Conn) {
		for {
			if _, err := c.ReadMessage(1<<20, 8); err != nil {
				return
			}
			read.Add(1)
		}
	})
	p := pusherTo(t, s.Addr(), nil)
	for range 100 {
		if err := p.Send(background(t), [][]byte{[]byte("jobs"), nil, []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	if p.Connections() != 1 {
		t.Fatalf("Connections = %d, want 1", p.Connections())
	}
	if err := p.Close(background(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	testkit.Eventually(t, "100 messages read", func() bool { return read.Load() == 100 })
}

// TestPusherWaitsForItsPeerUntilClosed: with nobody bound, Send redials
// until the Pusher closes, and then fails with ErrClosed.
func TestPusherWaitsForItsPeerUntilClosed(t *testing.T) {
	testkit.NoLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr()
	ln.Close() // nobody listens there now
	logs := streamtest.NewLogRecorder(nil)
	p := pusherTo(t, addr, logs)
	sent := make(chan error, 1)
	go func() { sent <- p.Send(context.Background(), [][]byte{[]byte("x")}) }()
	testkit.Eventually(t, "a failed dial logged", func() bool { return len(logs.Containing("cannot reach queue")) == 1 })
	select {
	case err := <-sent:
		t.Fatalf("Send returned %v with nobody bound", err)
	default:
	}
	if err := p.Close(background(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-sent; !errors.Is(err, ErrClosed) {
		t.Fatalf("Send = %v, want ErrClosed", err)
	}
}

func TestPusherTakesTheTargetsErrorAsFinal(t *testing.T) {
	testkit.NoLeaks(t)
	gone := errors.New("the reader stopped")
	calls := 0
	p := NewPusher("jobs", func() (string, string, error) { calls++; return "", "", gone }, clock.System{}, discard)
	defer p.Close(background(t))
	if err := p.Send(background(t), [][]byte{[]byte("x")}); !errors.Is(err, gone) || calls != 1 {
		t.Fatalf("Send = %v after %d calls of the target, want its error after one", err, calls)
	}
}

// TestPusherCloseCutsAWriteWhenItsContextEnds: a Send blocked on a peer
// that reads nothing is cut when Close's context ends, and Close says so.
func TestPusherCloseCutsAWriteWhenItsContextEnds(t *testing.T) {
	testkit.NoLeaks(t)
	s := listen(t, ServerConfig{Type: zmq4.Pull})
	release := make(chan struct{})
	s.Serve(func(*Conn) { <-release }) // reads nothing
	defer close(release)
	p := pusherTo(t, s.Addr(), nil)
	body := make([]byte, 64<<20) // more than the connection buffers
	sent := make(chan error, 1)
	go func() { sent <- p.Send(context.Background(), [][]byte{body}) }()
	testkit.Eventually(t, "the Send writing", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.writing
	})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Close(ended); err == nil {
		t.Fatal("Close cut a write and returned nil")
	}
	if err := <-sent; err == nil {
		t.Fatal("the cut Send returned nil")
	}
}

// SendBatch writes every message of the batch, in order, before it returns.
func TestPusherSendBatchWritesEveryMessageInOrder(t *testing.T) {
	testkit.NoLeaks(t)
	s := listen(t, ServerConfig{Type: zmq4.Pull})
	got := make(chan string, 100)
	s.Serve(func(c *Conn) {
		for {
			m, err := c.ReadMessage(1<<20, 8)
			if err != nil {
				return
			}
			got <- string(m[1])
		}
	})
	p := pusherTo(t, s.Addr(), nil)
	var msgs [][][]byte
	for i := range 100 {
		msgs = append(msgs, [][]byte{[]byte("jobs"), []byte(fmt.Sprint(i))})
	}
	if n, err := p.SendBatch(background(t), msgs); n != 100 || err != nil {
		t.Fatalf("SendBatch = %d, %v; want 100, nil", n, err)
	}
	for i := range 100 {
		if m := <-got; m != fmt.Sprint(i) {
			t.Fatalf("message %d read as %q", i, m)
		}
	}
}
