package rabbitmq

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// gatedConn is a socket whose writes wait until the test opens its gate,
// and which records each write it took.
type gatedConn struct {
	net.Conn // nil: only Write, Close and SetWriteDeadline are called

	gate chan struct{} // a write waits until it is closed
	fail error         // what each write returns once through the gate

	mu       sync.Mutex
	writes   [][]byte
	first    []*byte // each write's first byte, as passed
	started  chan struct{}
	closed   bool
	deadline time.Time
}

func newGatedConn() *gatedConn {
	return &gatedConn{gate: make(chan struct{}), started: make(chan struct{}, 100)}
}

func (g *gatedConn) Write(p []byte) (int, error) {
	g.started <- struct{}{}
	// Wait for the gate, or the write deadline, which may be set while
	// the write waits (as a socket's is).
	for open := false; !open; {
		select {
		case <-g.gate:
			open = true
		case <-time.After(time.Millisecond):
			g.mu.Lock()
			dl := g.deadline
			g.mu.Unlock()
			if !dl.IsZero() && time.Now().After(dl) {
				return 0, errors.New("i/o timeout")
			}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writes = append(g.writes, bytes.Clone(p))
	g.first = append(g.first, &p[0])
	if g.fail != nil {
		return 0, g.fail
	}
	return len(p), nil
}

func (g *gatedConn) SetWriteDeadline(t time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deadline = t
	return nil
}

func (g *gatedConn) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return nil
}

func (g *gatedConn) taken() ([][]byte, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writes, g.closed
}

// waitStarted waits until the socket's next write began.
func (g *gatedConn) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no write reached the socket")
	}
}

// waitIdle waits until c's socket is idle.
func waitIdle(t *testing.T, c *coalescingConn) {
	t.Helper()
	testkit.Eventually(t, "the socket's writer to stop", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.flushing
	})
}

// busy makes c's socket look just written to: the next write is gathered.
func busy(c *coalescingConn) {
	c.mu.Lock()
	c.idleSince = time.Now().Add(time.Hour)
	c.mu.Unlock()
}

func write(t *testing.T, c *coalescingConn, s string) {
	t.Helper()
	if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

// onTheWire returns a coalescingConn over a gatedConn whose write of
// first is on the wire and stays there until the gate opens: what is
// written next waits.
func onTheWire(t *testing.T, first string) (*gatedConn, *coalescingConn) {
	t.Helper()
	g := newGatedConn()
	c := newCoalescingConn(g)
	busy(c)
	write(t, c, first)
	g.waitStarted(t)
	return g, c
}

// Writes that come while one is on the wire reach the socket together,
// in order, in one write after it; Write returns without waiting for the
// socket.
func TestCoalescingConnGathersWritesThatComeTogether(t *testing.T) {
	g, c := onTheWire(t, "a")
	for _, s := range []string{"b", "c", "d"} {
		write(t, c, s) // returns though the socket takes nothing
	}
	close(g.gate)
	waitIdle(t, c)
	writes, _ := g.taken()
	if len(writes) != 2 || string(writes[0]) != "a" || string(writes[1]) != "bcd" {
		t.Fatalf("the socket took %q, want [a bcd]", writes)
	}
}

// A write that finds the socket idle for a while goes straight to it,
// with no copy and no other goroutine, and Write returns once the socket
// took it.
func TestCoalescingConnWritesALoneWriteAtOnce(t *testing.T) {
	g := newGatedConn()
	close(g.gate)
	c := newCoalescingConn(g)
	for i := range 3 {
		p := []byte("alone")
		write(t, c, string(p))
		writes, _ := g.taken()
		if len(writes) != i+1 {
			t.Fatalf("write %d: the socket took %d writes when Write returned, want %d", i, len(writes), i+1)
		}
		time.Sleep(2 * gatherAfter)
	}
	// A large write that finds the socket idle is not copied, even right
	// after another.
	busy(c)
	big := bytes.Repeat([]byte("x"), directWrite)
	if _, err := c.Write(big); err != nil {
		t.Fatal(err)
	}
	if first := g.first[len(g.first)-1]; first != &big[0] {
		t.Fatal("a large write to an idle socket was copied")
	}
}

// Over a real socket, what many writers write (one at a time, as amqp091
// does, with sizes small and large) arrives whole and in order.
func TestCoalescingConnKeepsTheOrderOverASocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer s.Close()
		b, _ := io.ReadAll(s)
		got <- b
	}()
	sock, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := newCoalescingConn(sock)
	var (
		lock sync.Mutex // amqp091's: one write at a time
		want bytes.Buffer
		wg   sync.WaitGroup
	)
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range 300 {
				n := 1 + r.IntN(2000)
				if i%50 == 0 {
					n = directWrite + r.IntN(maxPendingWrite) // large, and past the bound
				}
				p := bytes.Repeat([]byte{byte(w*31 + i)}, n)
				lock.Lock()
				want.Write(p)
				_, err := c.Write(p)
				lock.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b := <-got
	if !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("the peer read %d bytes, %d written; equal: %v", len(b), want.Len(), bytes.Equal(b, want.Bytes()))
	}
}

// While the socket takes nothing, at most maxPendingWrite bytes wait: a
// write that would make more wait until the socket took them.
func TestCoalescingConnBoundsWhatWaits(t *testing.T) {
	g, c := onTheWire(t, "first")
	fill := make([]byte, maxPendingWrite)
	if _, err := c.Write(fill); err != nil {
		t.Fatal(err)
	}
	returned := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte("over"))
		returned <- err
	}()
	select {
	case err := <-returned:
		t.Fatalf("a write past the bound returned (%v) while the socket took nothing", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(g.gate)
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	writes, _ := g.taken()
	var all []byte
	for _, w := range writes {
		all = append(all, w...)
	}
	if want := append(append([]byte("first"), fill...), "over"...); !bytes.Equal(all, want) {
		t.Fatalf("the socket took %d bytes in %d writes, want %d", len(all), len(writes), len(want))
	}
}

// A write the socket failed is reported by the next Write, and the socket
// is closed, so the connection's reader stops too.
func TestCoalescingConnReportsAFailedWrite(t *testing.T) {
	g := newGatedConn()
	broken := errors.New("broken pipe")
	g.fail = broken
	c := newCoalescingConn(g)
	busy(c)
	write(t, c, "lost")
	close(g.gate)
	waitIdle(t, c)
	if _, closed := g.taken(); !closed {
		t.Fatal("the socket is still open after its write failed")
	}
	if _, err := c.Write([]byte("next")); !errors.Is(err, broken) {
		t.Fatalf("the next Write returned %v, want %v", err, broken)
	}
	// A write straight to the socket that fails returns the error itself.
	g2 := newGatedConn()
	g2.fail = broken
	close(g2.gate)
	c2 := newCoalescingConn(g2)
	if _, err := c2.Write([]byte("alone")); !errors.Is(err, broken) {
		t.Fatalf("a direct write returned %v, want %v", err, broken)
	}
}

// Close writes what waits first (amqp091 writes connection.close-ok just
// before it closes), and then fails every write.
func TestCoalescingConnCloseWritesWhatWaits(t *testing.T) {
	g, c := onTheWire(t, "close-ok")
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	time.Sleep(20 * time.Millisecond)
	close(g.gate)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	writes, isClosed := g.taken()
	if len(writes) != 1 || string(writes[0]) != "close-ok" || !isClosed {
		t.Fatalf("the socket took %q and closed=%v, want [close-ok] and closed", writes, isClosed)
	}
	if _, err := c.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close returned %v, want net.ErrClosed", err)
	}
}

// Close waits at most closeFlushTimeout for a socket that takes nothing.
func TestCoalescingConnCloseDoesNotWaitForAStuckSocket(t *testing.T) {
	g, c := onTheWire(t, "stuck") // the gate never opens
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > closeFlushTimeout+5*time.Second {
		t.Fatalf("Close took %v on a stuck socket", took)
	}
	if _, closed := g.taken(); !closed {
		t.Fatal("Close left the socket open")
	}
}
