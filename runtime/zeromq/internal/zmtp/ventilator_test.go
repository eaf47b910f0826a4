package zmtp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// listenVentilator binds a Ventilator on loopback for the test; the test
// closes it, or its cleanup does.
func listenVentilator(t *testing.T, queueSize int, logs *streamtest.LogRecorder) *Ventilator {
	t.Helper()
	log := discard
	if logs != nil {
		log = logs.Logger()
	}
	v, err := ListenVentilator(VentilatorConfig{
		Name: "work", Network: "tcp", Address: "127.0.0.1:0", QueueSize: queueSize,
		Clock: clock.System{}, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = v.Close(ctx)
	})
	return v
}

// TestVentilatorHandsOutRoundRobin: with every worker's queue roomy, each
// message goes to the next worker in turn, however the writing goroutines
// are scheduled.
func TestVentilatorHandsOutRoundRobin(t *testing.T) {
	testkit.NoLeaks(t)
	v := listenVentilator(t, 100, nil)
	var workers []*peer
	for i := range 3 {
		workers = append(workers, dialPeer(t, v.Addr(), zmq4.Pull))
		testkit.Eventually(t, fmt.Sprint(i+1, " workers"), func() bool { return v.Connections() == i+1 })
	}
	for i := range 30 {
		if err := v.Send(background(t), [][]byte{[]byte(fmt.Sprint(i))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for k, w := range workers {
		for n := range 10 {
			if got, want := string(w.read(t)[0]), fmt.Sprint(3*n+k); got != want {
				t.Fatalf("worker %d read message %s, want %s", k, got, want)
			}
		}
	}
}

// TestVentilatorSkipsAWorkerWhoseQueueIsFull: a worker that reads nothing
// takes what its connection buffers and its queue hold; the others get the
// rest, and no Send waits for it.
func TestVentilatorSkipsAWorkerWhoseQueueIsFull(t *testing.T) {
	testkit.NoLeaks(t)
	const messages = 60
	v := listenVentilator(t, 1, nil)
	dialPeer(t, v.Addr(), zmq4.Pull) // reads nothing
	testkit.Eventually(t, "the first worker", func() bool { return v.Connections() == 1 })
	reader := dialPeer(t, v.Addr(), zmq4.Pull)
	testkit.Eventually(t, "the second worker", func() bool { return v.Connections() == 2 })
	var read atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if _, err := reader.ReadMessage(2<<20, 8); err != nil {
				return
			}
			read.Add(1)
		}
	})
	body := make([]byte, 1<<20)
	for i := range messages {
		if err := v.Send(background(t), [][]byte{body}, nil); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	testkit.Eventually(t, "the reading worker got more than its turn", func() bool { return read.Load() > messages/2 })
	reader.raw.Close()
	wg.Wait()
}

// TestVentilatorCloseCountsWhatItCouldNotWrite: a worker that reads
// nothing until the end, and a Close whose deadline has passed. Every
// message Send accepted is either written (and the worker reads it
// afterwards) or lost: its done says so, a warning counts them, and Close
// returns an error with that count.
func TestVentilatorCloseCountsWhatItCouldNotWrite(t *testing.T) {
	testkit.NoLeaks(t)
	logs := streamtest.NewLogRecorder(nil)
	v := listenVentilator(t, 2, logs)
	w := dialPeer(t, v.Addr(), zmq4.Pull)
	testkit.Eventually(t, "the worker", func() bool { return v.Connections() == 1 })

	var written, lost atomic.Int64
	done := func(err error) {
		if err == nil {
			written.Add(1)
		} else if errors.Is(err, errNotWritten) {
			lost.Add(1)
		} else {
			t.Errorf("done(%v)", err)
		}
	}
	body := make([]byte, 1<<20)
	accepted := 0
	for ; ; accepted++ {
		if accepted == 200 {
			t.Fatal("200 messages of 1 MiB accepted for a worker that reads nothing")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := v.Send(ctx, [][]byte{[]byte(fmt.Sprint(accepted)), body}, done)
		cancel()
		if err != nil {
			break // the worker's connection and queue are full
		}
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	err := v.Close(ended)
	if written.Load()+lost.Load() != int64(accepted) {
		t.Fatalf("%d written and %d lost of %d accepted", written.Load(), lost.Load(), accepted)
	}
	if lost.Load() < 2 || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d messages", lost.Load())) {
		t.Fatalf("Close = %v with %d lost, want an error counting at least the 2 queued", err, lost.Load())
	}
	if l := logs.Containing("they are lost"); len(l) != 1 || l[0].Attrs["lost"] != fmt.Sprint(lost.Load()) || l[0].Attrs["queue"] != "work" {
		t.Fatalf("logs:\n%s", logs)
	}

	// The worker reads what was written, in order, and nothing more.
	read := 0
	for {
		_ = w.raw.SetReadDeadline(time.Now().Add(patience))
		frames, err := w.ReadMessage(2<<20, 8)
		if err != nil {
			break
		}
		if string(frames[0]) != fmt.Sprint(read) {
			t.Fatalf("message %d is %s", read, frames[0])
		}
		read++
	}
	if int64(read) != written.Load() {
		t.Fatalf("the worker read %d messages, %d were written", read, written.Load())
	}
	t.Logf("%d accepted: %d written and read, %d lost", accepted, read, lost.Load())
}

// TestVentilatorCloseWaitsForWhatItAccepted: Close writes the messages it
// accepted before it hangs up, even to a worker that connects meanwhile.
func TestVentilatorCloseWaitsForWhatItAccepted(t *testing.T) {
	testkit.NoLeaks(t)
	v := listenVentilator(t, 10, nil)
	w := dialPeer(t, v.Addr(), zmq4.Pull)
	testkit.Eventually(t, "the worker", func() bool { return v.Connections() == 1 })
	for i := range 5 {
		if err := v.Send(background(t), [][]byte{[]byte(fmt.Sprint(i))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Close(background(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i := range 5 {
		if got := string(w.read(t)[0]); got != fmt.Sprint(i) {
			t.Fatalf("message %d is %s", i, got)
		}
	}
	if err := v.Send(background(t), [][]byte{[]byte("late")}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close = %v, want ErrClosed", err)
	}
}

// writesConn is a net.Conn that records each write; after failAfter bytes
// (when above 0) a write writes what is left of them and fails.
type writesConn struct {
	net.Conn
	writes    [][]byte
	total     int
	failAfter int
}

func (c *writesConn) Write(p []byte) (int, error) {
	n := len(p)
	var err error
	if c.failAfter > 0 && c.total+n > c.failAfter {
		n, err = c.failAfter-c.total, errors.New("connection reset")
	}
	c.writes = append(c.writes, bytes.Clone(p[:n]))
	c.total += n
	return n, err
}

func (c *writesConn) SetWriteDeadline(time.Time) error { return nil }
func (c *writesConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

// The messages waiting in a worker's queue go out with one write; when the
// write fails, those whose every byte was written count as written and the
// rest are handed back, the one cut short first.
func TestVentilatorWritesQueuedMessagesTogether(t *testing.T) {
	testkit.NoLeaks(t)
	msg := func(i int) item { return item{frames: [][]byte{[]byte("q"), []byte(fmt.Sprint("message ", i))}} }
	fill := func(p *ventPeer, n int) {
		for i := 1; i < n; i++ {
			p.q <- msg(i)
		}
	}
	raw := &writesConn{}
	p := &ventPeer{c: NewConn(raw), q: make(chan item, 16)}
	fill(p, 10)
	written, unsent, err := p.writeBatch(context.Background(), msg(0))
	if err != nil || len(written) != 10 || len(unsent) != 0 || len(raw.writes) != 1 {
		t.Fatalf("%d written, %d unsent, %v, in %d writes; want 10 in 1", len(written), len(unsent), err, len(raw.writes))
	}
	var want []byte
	for i := range 10 {
		want = AppendEncode(want, msg(i).frames)
	}
	if !bytes.Equal(raw.writes[0], want) {
		t.Fatalf("wrote %q, want %q", raw.writes[0], want)
	}

	one := len(Encode(msg(0).frames))
	raw = &writesConn{failAfter: 3*one + 2}
	p = &ventPeer{c: NewConn(raw), q: make(chan item, 16)}
	fill(p, 6)
	written, unsent, err = p.writeBatch(context.Background(), msg(0))
	if err == nil || len(written) != 3 || len(unsent) != 3 || string(unsent[0].frames[1]) != "message 3" {
		t.Fatalf("a write cut in message 3: %d written, %d unsent (%v), %v", len(written), len(unsent), unsent, err)
	}
}

// A batch stops at batchMessages messages; the rest wait for the next write.
func TestVentilatorBatchIsBounded(t *testing.T) {
	testkit.NoLeaks(t)
	raw := &writesConn{}
	p := &ventPeer{c: NewConn(raw), q: make(chan item, 2*batchMessages)}
	for range 2 * batchMessages {
		p.q <- item{frames: [][]byte{[]byte("x")}}
	}
	written, _, err := p.writeBatch(context.Background(), <-p.q)
	if err != nil || len(written) != batchMessages || len(p.q) != batchMessages {
		t.Fatalf("%d written, %d left, %v", len(written), len(p.q), err)
	}
}
