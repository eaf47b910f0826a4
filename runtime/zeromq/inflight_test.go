package zeromq_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/go-zeromq/zmq4"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
	"github.com/streamgen/streamgen/runtime/zeromq/internal/zmtp"
)

// streamJob connects to ep as a ZMTP PUSH peer and sends one job whose
// body is size bytes: "job <id>|" and zeros, written 64 KiB at a time, so
// that the sender holds next to nothing of it. It returns once the body is
// written (the reader has read all but what the kernel buffers hold), or
// the connection fails.
func streamJob(ep string, id, size int) error {
	raw, err := net.Dial("tcp", strings.TrimPrefix(ep, "tcp://"))
	if err != nil {
		return err
	}
	defer raw.Close()
	if _, err := zmtp.Handshake(raw, zmq4.Push, false, waitLimit); err != nil {
		return err
	}
	head := fmt.Appendf(nil, "job %d|", id)
	wire := zmtp.AppendEncode(nil, [][]byte{[]byte("jobs"), []byte("type: job\ncontent-type: text/x-padded-job")})
	// Frames 0 and 1 carry MORE (AppendEncode writes the last without it):
	// set it on the header frame, then announce the long body.
	wire[2+len("jobs")] |= 0x01
	wire = append(wire, 0x02)
	wire = binary.BigEndian.AppendUint64(wire, uint64(size))
	wire = append(wire, head...)
	if _, err := raw.Write(wire); err != nil {
		return err
	}
	zeros := make([]byte, 64<<10)
	for left := size - len(head); left > 0; left -= len(zeros) {
		if _, err := raw.Write(zeros[:min(left, len(zeros))]); err != nil {
			return err
		}
	}
	return nil // the reader reads what is written before the close
}

// TestManyConnectionsOfLargeMessagesStayWithinTheInFlightBound: 20
// connections each send a message of 2 MiB to a subscription whose handler
// holds the first one, with a bound of three such messages. Three are
// read; the other connections wait for room, so the heap grows by three
// messages, not twenty (without the bound it grew by all of them: prefetch
// and the connections waiting to hand theirs over). Once the handler lets
// go, every message arrives, and the bound was never passed.
func TestManyConnectionsOfLargeMessagesStayWithinTheInFlightBound(t *testing.T) {
	testkit.NoLeaks(t)
	const conns, size = 20, 2 << 20
	const message = size + 64 // the body and the name and header frames
	const bound = 3 * message
	ep := freeEndpoint(t)
	hold := make(chan struct{})
	var mu sync.Mutex
	seen := map[int]bool{}
	app := runtime.NewApp("inflight", runtime.WithCodec(paddedJob{}))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep), zeromq.MaxMessageBytes(message), zeromq.MaxInFlightBytes(bound)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("job", runtime.Policy{}, func(_ context.Context, j *Job, _ runtime.Metadata) runtime.Outcome {
			<-hold
			mu.Lock()
			seen[j.ID] = true
			mu.Unlock()
			return runtime.Ack()
		}),
	}})
	streamtest.RunApp(t, app)
	goruntime.GC()
	var before goruntime.MemStats
	goruntime.ReadMemStats(&before)

	sent := make(chan error, conns)
	for i := range conns {
		go func() { sent <- streamJob(ep, i, size) }()
	}
	testkit.Eventually(t, "three messages read, the other connections waiting for room", func() bool {
		inUse, _, waiting := zeromq.InFlight(zq, "jobs")
		return inUse >= 3*size && int(inUse/size)+waiting >= conns
	})
	goruntime.GC()
	var held goruntime.MemStats
	goruntime.ReadMemStats(&held)
	// The heap holds more than the messages (20 connections, their
	// buffers, what the senders and the race detector allocate): allow
	// five messages of that, far below the seventeen more the connections
	// would hold without the bound.
	if grew := int64(held.HeapAlloc) - int64(before.HeapAlloc); grew > bound+5*size {
		t.Errorf("the heap grew by %d MiB with the handler holding, want at most the bound, %d MiB, and %d MiB besides", grew>>20, bound>>20, 5*size>>20)
	}
	if inUse, _, waiting := zeromq.InFlight(zq, "jobs"); inUse > bound || waiting != conns-3 {
		t.Errorf("%d bytes in flight, %d connections waiting; want at most %d, and %d waiting", inUse, waiting, bound, conns-3)
	}

	close(hold)
	testkit.Eventually(t, "every message handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == conns
	})
	for range conns {
		if err := <-sent; err != nil {
			t.Errorf("a sender: %v", err)
		}
	}
	if _, peak, _ := zeromq.InFlight(zq, "jobs"); peak > bound {
		t.Errorf("at most %d bytes were in flight at once, over the bound of %d", peak, bound)
	}
	testkit.Eventually(t, "the bound free again", func() bool {
		inUse, _, waiting := zeromq.InFlight(zq, "jobs")
		return inUse == 0 && waiting == 0
	})
	if s := app.Stats()[0]; s.Acked != conns || s.Dropped != 0 {
		t.Errorf("metrics = %+v, want %d acked, none dropped", s, conns)
	}
}

// A bound smaller than the largest message the queue takes could never let
// that message in: Start refuses it, naming the subscription and both
// bounds. Without MaxInFlightBytes the default grows to one such message.
func TestStartRefusesAnInFlightBoundBelowTheMessageBound(t *testing.T) {
	testkit.NoLeaks(t)
	sub := func() *runtime.Subscription {
		return &runtime.Subscription{Name: "jobs", MaxPayloadBytes: 300 << 20, Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}}
	}
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t)), zeromq.MaxInFlightBytes(100<<20)))
	err := zq.Start(t.Context(), runtime.Env{}, []*runtime.Subscription{sub()})
	if err == nil || !strings.Contains(err.Error(), `subscription "jobs"`) || !strings.Contains(err.Error(), "MaxInFlightBytes is 104857600") || !strings.Contains(err.Error(), "315621376") {
		t.Fatalf("Start = %v, want it to refuse the bound, naming the subscription and both sizes", err)
	}

	zq = zeromq.New(zeromq.Queue("jobs", zeromq.Bind(freeEndpoint(t))))
	if err := zq.Start(t.Context(), runtime.Env{}, []*runtime.Subscription{sub()}); err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, zq)
	if inUse, _, _ := zeromq.InFlight(zq, "jobs"); inUse != 0 {
		t.Fatalf("%d bytes in flight at start", inUse)
	}
	if size := zeromq.InFlightBound(zq, "jobs"); size != 300<<20+1<<20 {
		t.Fatalf("default bound %d for messages of up to 301 MiB, want one such message", size)
	}
}
