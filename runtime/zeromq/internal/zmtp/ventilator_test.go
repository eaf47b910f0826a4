package zmtp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/internal/testkit"
	"github.com/streamgen/streamgen/runtime"
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
		Clock: runtime.SystemClock{}, Log: log,
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
